/* otlp_resource.c — see otlp_resource.h.
 *
 * Precedence, lowest first (a later source overrides an earlier one):
 *   1. detected: host.name, process.*, container.id, telemetry.sdk.language
 *      and process.runtime.* for CPython targets;
 *   2. every entry of the target's OTEL_RESOURCE_ATTRIBUTES (percent-
 *      decoded; a malformed list is ignored as a whole, as the spec says);
 *   3. service.name from the target's OTEL_SERVICE_NAME; when neither 2 nor
 *      3 names the service: "unnamed-python-service" for CPython targets
 *      (the Splunk Python distro's fallback), else the executable name;
 *   4. the resource attributes of the target's OTEP 4719 process context,
 *      which its own SDK published (so the same service.name, service.
 *      instance.id, deployment.environment.name as its other signals);
 *   5. telemetry.distro.name=splunk-profd and telemetry.distro.version,
 *      which identify who produced the data.
 *
 * Everything read from /proc/PID is untrusted: reads are bounded, values
 * are capped in length, and the attribute count is capped. */
#include "otlp/otlp_resource.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "otlp/export_config.h"
#include "util/cleanup.h"

#define ENVIRON_MAX_BYTES (256 * 1024)
#define CMDLINE_MAX_BYTES (16 * 1024)
#define CGROUP_MAX_BYTES  (16 * 1024)
#define MAPS_MAX_BYTES    (1024 * 1024)
#define VALUE_MAX_BYTES   4096
#define CONTAINER_ID_LEN  64

/* Reads at most max-1 bytes of a /proc file into a malloc'd, NUL-ended
 * buffer; *len excludes the terminator.  NULL on failure. */
static char *read_bounded(pid_t pid, const char *name, size_t max, size_t *len)
{
        char path[64];
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = malloc(max);
        size_t n = 0;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || !buf)
                return NULL;
        while (n + 1 < max) {
                ssize_t r = read(fd, buf + n, max - 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                n += (size_t)r;
        }
        buf[n] = '\0';
        *len = n;
        return take_ptr(buf);
}

/* The value of NAME in a NUL-separated environ block, or NULL. */
static const char *environ_get(const char *env, size_t len, const char *name)
{
        size_t name_len = strlen(name);

        for (size_t at = 0; at < len; at += strlen(env + at) + 1)
                if (strncmp(env + at, name, name_len) == 0 && env[at + name_len] == '=')
                        return env + at + name_len + 1;
        return NULL;
}

static void attr_free(struct otlp_attr *attr)
{
        free(attr->key);
        free(attr->str);
        *attr = (struct otlp_attr){0};
}

/* Sets (or replaces) key.  str NULL: an int.  Silently capped. */
static void set_attr(struct otlp_resource *resource, const char *key, const char *str, int64_t num)
{
        struct otlp_attr *attr = NULL;

        for (size_t i = 0; i < resource->n_attrs && !attr; i++)
                if (strcmp(resource->attrs[i].key, key) == 0)
                        attr = &resource->attrs[i];
        if (!attr) {
                if (resource->n_attrs == OTLP_RESOURCE_MAX_ATTRS)
                        return;
                attr = &resource->attrs[resource->n_attrs++];
        } else {
                attr_free(attr);
        }
        attr->key = strndup(key, 256);
        attr->str = str ? strndup(str, VALUE_MAX_BYTES) : NULL;
        attr->num = num;
        if (!attr->key || (str && !attr->str)) {
                attr_free(attr);
                *attr = resource->attrs[--resource->n_attrs];
        }
}

static bool set_attr_cb(void *arg, const char *key, const char *value)
{
        set_attr(arg, key, value, 0);
        return true;
}

static bool count_cb(void *arg, const char *key, const char *value)
{
        (void)key, (void)value;
        ++*(size_t *)arg;
        return true;
}

static bool is_hex64(const char *p)
{
        for (int i = 0; i < CONTAINER_ID_LEN; i++)
                if (!isxdigit((unsigned char)p[i]) || isupper((unsigned char)p[i]))
                        return false;
        return !isxdigit((unsigned char)p[CONTAINER_ID_LEN]);
}

/* The last 64-hex-digit run of /proc/PID/cgroup (docker-<id>.scope,
 * /docker/<id>, cri-containerd-<id>.scope, crio-<id>, libpod-<id>...). */
static void detect_container(struct otlp_resource *resource, pid_t pid)
{
        size_t len = 0;
        _cleanup_free_ char *text = read_bounded(pid, "cgroup", CGROUP_MAX_BYTES, &len);
        const char *found = NULL;
        char id[CONTAINER_ID_LEN + 1];

        for (size_t i = 0; text && i + CONTAINER_ID_LEN <= len; i++)
                if ((i == 0 || !isxdigit((unsigned char)text[i - 1])) && is_hex64(text + i))
                        found = text + i;
        if (!found)
                return;
        memcpy(id, found, CONTAINER_ID_LEN);
        id[CONTAINER_ID_LEN] = '\0';
        set_attr(resource, "container.id", id, 0);
}

static void detect_process(struct otlp_resource *resource, pid_t pid, char *exe, size_t exe_size)
{
        char path[64], host[256];
        size_t len = 0;
        ssize_t n;
        _cleanup_free_ char *cmdline = read_bounded(pid, "cmdline", CMDLINE_MAX_BYTES, &len);

        if (gethostname(host, sizeof(host)) == 0) {
                host[sizeof(host) - 1] = '\0';
                set_attr(resource, "host.name", host, 0);
        }
        set_attr(resource, "process.pid", NULL, pid);
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        n = readlink(path, exe, exe_size - 1);
        exe[n > 0 ? n : 0] = '\0';
        if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
                exe[n - 10] = '\0';
        if (*exe) {
                const char *slash = strrchr(exe, '/');
                set_attr(resource, "process.executable.path", exe, 0);
                set_attr(resource, "process.executable.name", slash ? slash + 1 : exe, 0);
        }
        if (cmdline && len) {
                while (len && cmdline[len - 1] == '\0')
                        len--;
                for (size_t i = 0; i < len; i++)
                        if (cmdline[i] == '\0')
                                cmdline[i] = ' ';
                set_attr(resource, "process.command_line", cmdline, 0);
        }
}

/* "python3.11" / "libpython3.11.so.1.0" → "3.11".  false if not Python. */
static bool python_version_in(const char *name, char *version, size_t version_size)
{
        const char *p = strstr(name, "python");
        size_t n = 0;

        if (!p)
                return false;
        p += 6;
        while (n + 1 < version_size && (isdigit((unsigned char)p[n]) || p[n] == '.'))
                n++;
        while (n && p[n - 1] == '.')
                n--;
        memcpy(version, p, n);
        version[n] = '\0';
        return true;
}

bool otlp_runtime__detect(pid_t pid, struct otlp_runtime *runtime)
{
        char path[64], exe[1024];
        const char *base;
        size_t len = 0;
        ssize_t n;

        *runtime = (struct otlp_runtime){0};
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        n = readlink(path, exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = '\0';
        base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        if (strncmp(base, "python", 6) == 0)
                runtime->python =
                    python_version_in(base, runtime->version, sizeof(runtime->version));
        if (!runtime->python || !runtime->version[0]) {
                _cleanup_free_ char *maps = read_bounded(pid, "maps", MAPS_MAX_BYTES, &len);
                const char *lib = maps ? strstr(maps, "/libpython3") : NULL;
                if (lib)
                        runtime->python =
                            python_version_in(lib, runtime->version, sizeof(runtime->version));
        }
        return runtime->python;
}

static void detect_runtime(struct otlp_resource *resource, const struct otlp_runtime *runtime)
{
        if (!runtime->python)
                return;
        set_attr(resource, "telemetry.sdk.language", "python", 0);
        set_attr(resource, "process.runtime.name", "cpython", 0);
        if (runtime->version[0])
                set_attr(resource, "process.runtime.version", runtime->version, 0);
}

/* Steps 2 and 3 of the precedence. */
static void apply_target_environment(struct otlp_resource *resource, pid_t pid,
                                     const struct otlp_runtime *runtime, const char *exe)
{
        size_t len = 0, n_entries = 0;
        _cleanup_free_ char *env = read_bounded(pid, "environ", ENVIRON_MAX_BYTES, &len);
        const char *attributes = env ? environ_get(env, len, "OTEL_RESOURCE_ATTRIBUTES") : NULL;
        const char *service = env ? environ_get(env, len, "OTEL_SERVICE_NAME") : NULL;
        const char *slash = strrchr(exe, '/');

        /* All or nothing: a malformed list is ignored as a whole. */
        if (attributes && export_config__parse_kv_list(attributes, count_cb, &n_entries))
                (void)export_config__parse_kv_list(attributes, set_attr_cb, resource);
        if (service && *service)
                set_attr(resource, "service.name", service, 0);
        else if (runtime->python && !otlp_resource__get(resource, "service.name"))
                set_attr(resource, "service.name", "unnamed-python-service", 0);
        else if (!otlp_resource__get(resource, "service.name"))
                set_attr(resource, "service.name", slash ? slash + 1 : *exe ? exe : "unknown", 0);
}

static void build_message(struct otlp_resource *resource)
{
        opentelemetry__proto__resource__v1__resource__init(&resource->message);
        for (size_t i = 0; i < resource->n_attrs; i++) {
                const struct otlp_attr *attr = &resource->attrs[i];
                Opentelemetry__Proto__Common__V1__AnyValue *value = &resource->values[i];
                opentelemetry__proto__common__v1__any_value__init(value);
                if (attr->str) {
                        value->value_case =
                            OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
                        value->string_value = attr->str;
                } else {
                        value->value_case =
                            OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
                        value->int_value = attr->num;
                }
                opentelemetry__proto__common__v1__key_value__init(&resource->kv[i]);
                resource->kv[i].key = attr->key;
                resource->kv[i].value = value;
                resource->kv_ptrs[i] = &resource->kv[i];
        }
        resource->message.n_attributes = resource->n_attrs;
        resource->message.attributes = resource->kv_ptrs;
}

struct otlp_resource *otlp_resource__new(pid_t pid, const struct otlp_runtime *runtime)
{
        return otlp_resource__new_with_context(pid, runtime, NULL);
}

/* Step 4 of the precedence. */
static void apply_process_context(struct otlp_resource *resource,
                                  const struct process_context *context)
{
        for (size_t i = 0; context && i < context->n_attrs; i++) {
                const struct process_context_attr *attr = &context->attrs[i];
                /* Who produced the data stays ours. */
                if (strncmp(attr->key, "telemetry.distro.", 17) != 0)
                        set_attr(resource, attr->key, attr->str, attr->num);
        }
}

struct otlp_resource *otlp_resource__new_with_context(pid_t pid, const struct otlp_runtime *runtime,
                                                      const struct process_context *context)
{
        struct otlp_resource *resource = calloc(1, sizeof(*resource));
        struct otlp_runtime detected;
        char exe[1024];

        if (!resource)
                return NULL;
        if (!runtime) {
                (void)otlp_runtime__detect(pid, &detected);
                runtime = &detected;
        }
        resource->refs = 1;
        resource->pid = pid;
        detect_process(resource, pid, exe, sizeof(exe));
        detect_container(resource, pid);
        detect_runtime(resource, runtime);
        apply_target_environment(resource, pid, runtime, exe);
        apply_process_context(resource, context);
        set_attr(resource, "telemetry.distro.name", "splunk-profd", 0);
        set_attr(resource, "telemetry.distro.version", PROFD_VERSION, 0);
        build_message(resource);
        return resource;
}

struct otlp_resource *otlp_resource__ref(struct otlp_resource *resource)
{
        __atomic_add_fetch(&resource->refs, 1, __ATOMIC_RELAXED);
        return resource;
}

void otlp_resource__unref(struct otlp_resource *resource)
{
        if (!resource || __atomic_sub_fetch(&resource->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        for (size_t i = 0; i < resource->n_attrs; i++)
                attr_free(&resource->attrs[i]);
        free(resource);
}

const char *otlp_resource__get(const struct otlp_resource *resource, const char *key)
{
        for (size_t i = 0; i < resource->n_attrs; i++)
                if (strcmp(resource->attrs[i].key, key) == 0)
                        return resource->attrs[i].str;
        return NULL;
}
