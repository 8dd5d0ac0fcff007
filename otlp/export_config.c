/* export_config.c — see export_config.h.
 *
 * Everything an operator can get wrong about export (a URL without a
 * scheme, a port out of range, a CA file that is unreadable, a directory
 * or not PEM, a malformed header list, a control byte in a header or in
 * SPLUNK_ACCESS_TOKEN) is caught here, before any target is touched, so that a bad
 * deployment fails at once with one clear line and exit status 2 instead
 * of sampling for hours into a collector that can never be reached. */
#include "otlp/export_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

#define DEFAULT_PORT       4317
#define MIN_FLUSH_MS       1000
#define MAX_FLUSH_MS       300000
#define KV_MAX_ENTRY_BYTES 8192
/* As otlp_grpc.c reads at most; a CA bundle is a few hundred KiB. */
#define CA_MAX_BYTES    (4 * 1024 * 1024)
#define PEM_CERTIFICATE "-----BEGIN CERTIFICATE-----"

__attribute__((format(printf, 3, 4))) static bool fail(char *error, size_t error_size,
                                                       const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(error, error_size, fmt, ap);
        va_end(ap);
        return false;
}

/* Host part: [v6] or a name/IPv4 of [A-Za-z0-9.-_].  Returns its length. */
static size_t host_length(const char *p)
{
        size_t n = 0;

        if (*p == '[') {
                const char *end = strchr(p, ']');
                return end ? (size_t)(end - p) + 1 : 0;
        }
        while (isalnum((unsigned char)p[n]) || p[n] == '.' || p[n] == '-' || p[n] == '_')
                n++;
        return n;
}

static bool parse_port(const char *p, long *port, const char **end)
{
        char *stop;

        if (!isdigit((unsigned char)*p))
                return false;
        errno = 0;
        *port = strtol(p, &stop, 10);
        *end = stop;
        return errno == 0 && *port >= 1 && *port <= 65535 && (!*stop || *stop == '/');
}

bool export_config__parse_endpoint(struct export_config *config, const char *url, char *error,
                                   size_t error_size)
{
        const char *p, *rest;
        size_t host_len;
        long port = DEFAULT_PORT;

        if (strncmp(url, "http://", 7) == 0) {
                config->tls = false;
                p = url + 7;
        } else if (strncmp(url, "https://", 8) == 0) {
                config->tls = true;
                p = url + 8;
        } else if (strstr(url, "://")) {
                return fail(error, error_size,
                            "endpoint '%.128s': unknown scheme (use http:// or https://)", url);
        } else {
                return fail(error, error_size,
                            "endpoint '%.128s': no scheme (use http://HOST:PORT or "
                            "https://HOST:PORT)",
                            url);
        }
        host_len = host_length(p);
        if (host_len == 0 || host_len > 255)
                return fail(error, error_size, "endpoint '%.128s': no valid host", url);
        rest = p + host_len;
        if (*rest == ':' && !parse_port(rest + 1, &port, &rest))
                return fail(error, error_size, "endpoint '%.128s': port must be in 1..65535", url);
        if (*rest && strcmp(rest, "/") != 0)
                return fail(error, error_size,
                            "endpoint '%.128s': unexpected text after HOST:PORT (gRPC endpoints "
                            "have no path)",
                            url);
        snprintf(config->endpoint, sizeof(config->endpoint), "%s", url);
        snprintf(config->target, sizeof(config->target), "%.*s:%ld", (int)host_len, p, port);
        return true;
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        c = (char)tolower((unsigned char)c);
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Trims and percent-decodes [begin, end) into out (size out_size). */
static bool decode_part(const char *begin, const char *end, char *out, size_t out_size)
{
        size_t n = 0;

        while (begin < end && isspace((unsigned char)*begin))
                begin++;
        while (end > begin && isspace((unsigned char)end[-1]))
                end--;
        for (; begin < end; begin++) {
                char c = *begin;
                if (c == '%') {
                        if (end - begin < 3 || hex_value(begin[1]) < 0 || hex_value(begin[2]) < 0)
                                return false;
                        c = (char)(hex_value(begin[1]) * 16 + hex_value(begin[2]));
                        begin += 2;
                }
                if (n + 1 >= out_size)
                        return false;
                out[n++] = c;
        }
        out[n] = '\0';
        return true;
}

bool export_config__parse_kv_list(const char *text,
                                  bool (*each)(void *arg, const char *key, const char *value),
                                  void *arg)
{
        char key[KV_MAX_ENTRY_BYTES], value[KV_MAX_ENTRY_BYTES];

        while (*text) {
                const char *comma = strchr(text, ',');
                const char *end = comma ? comma : text + strlen(text);
                const char *equals = memchr(text, '=', (size_t)(end - text));
                bool blank = true;

                for (const char *c = text; c < end; c++)
                        blank = blank && isspace((unsigned char)*c);
                if (!blank) {
                        if (!equals || !decode_part(text, equals, key, sizeof(key)) || !*key ||
                            !decode_part(equals + 1, end, value, sizeof(value)) ||
                            !each(arg, key, value))
                                return false;
                }
                text = comma ? comma + 1 : end;
        }
        return true;
}

struct header_parse {
        struct export_config *config;
        char *error;
        size_t error_size;
};

/* gRPC metadata keys: lowercase [0-9a-z-_.], not starting with ':'. */
static bool header_key_valid(const char *key)
{
        for (const char *c = key; *c; c++)
                if (!(isdigit((unsigned char)*c) || islower((unsigned char)*c) || *c == '-' ||
                      *c == '_' || *c == '.'))
                        return false;
        return *key && strncmp(key, "grpc-", 5) != 0;
}

/* gRPC sends a value as an HTTP/2 header: only printable ASCII and space
 * (a "-bin" key's value is base64'd by gRPC, so any byte goes).  A CR or
 * LF accepted here would make every single request fail later. */
static int header_value_bad_byte(const char *key, const char *value)
{
        size_t key_len = strlen(key);

        if (key_len > 4 && strcmp(key + key_len - 4, "-bin") == 0)
                return -1;
        for (const char *c = value; *c; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
                        return (unsigned char)*c;
        return -1;
}

static bool add_header(void *arg, const char *key, const char *value)
{
        struct header_parse *parse = arg;
        struct export_config *config = parse->config;
        struct export_header *header = NULL;
        char lower[sizeof(header->key)];
        size_t i;

        if (strlen(key) >= sizeof(lower) || strlen(value) >= EXPORT_MAX_HEADER_LEN)
                return fail(parse->error, parse->error_size, "header '%.64s': too long", key);
        for (i = 0; key[i]; i++)
                lower[i] = (char)tolower((unsigned char)key[i]);
        lower[i] = '\0';
        if (!header_key_valid(lower))
                return fail(parse->error, parse->error_size,
                            "header '%.64s': not a valid gRPC metadata key", key);
        int bad = header_value_bad_byte(lower, value);
        if (bad >= 0)
                return fail(parse->error, parse->error_size,
                            "header '%.64s': byte 0x%02x in the value (only printable ASCII)", key,
                            bad);
        for (i = 0; i < config->n_headers && !header; i++)
                if (strcmp(config->headers[i].key, lower) == 0)
                        header = &config->headers[i];
        if (!header) {
                if (config->n_headers == EXPORT_MAX_HEADERS)
                        return fail(parse->error, parse->error_size, "more than %s headers", "32");
                header = &config->headers[config->n_headers++];
        }
        snprintf(header->key, sizeof(header->key), "%s", lower);
        snprintf(header->value, sizeof(header->value), "%s", value);
        return true;
}

/* Where the variables are read: the environment unless
 * export_config__resolve_from() names another source. */
struct lookup {
        export_lookup_fn fn;
        void *arg;
};

static const char *env_nonempty(const struct lookup *env, const char *name)
{
        const char *value = env->fn ? env->fn(env->arg, name) : getenv(name);

        return value && *value ? value : NULL;
}

/* The first non-empty of two variables, and its name. */
static const char *env_either(const struct lookup *env, const char *specific, const char *general,
                              const char **name)
{
        const char *value = env_nonempty(env, specific);

        *name = specific;
        if (value)
                return value;
        *name = general;
        return env_nonempty(env, general);
}

static bool resolve_headers(const struct lookup *env, struct export_config *config, char *error,
                            size_t error_size)
{
        const char *name, *text = env_either(env, "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
                                             "OTEL_EXPORTER_OTLP_HEADERS", &name);
        const char *token = env_nonempty(env, "SPLUNK_ACCESS_TOKEN");
        char why[256] = "malformed 'key=value,...' list";
        struct header_parse parse = {config, why, sizeof(why)};

        config->n_headers = 0;
        if (text && !export_config__parse_kv_list(text, add_header, &parse)) {
                snprintf(error, error_size, "%s: %s", name, why);
                return false;
        }
        if (token && !add_header(&parse, "x-sf-token", token)) {
                snprintf(error, error_size, "SPLUNK_ACCESS_TOKEN: %s", why);
                return false;
        }
        return true;
}

static bool resolve_timeout(const struct lookup *env, struct export_config *config, char *error,
                            size_t error_size)
{
        const char *name, *text = env_either(env, "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT",
                                             "OTEL_EXPORTER_OTLP_TIMEOUT", &name);
        char *end;
        long long value;

        config->timeout_ms = EXPORT_DEFAULT_TIMEOUT_MS;
        if (!text)
                return true;
        errno = 0;
        value = strtoll(text, &end, 10);
        if (errno || end == text || *end || value < 1 || value > 600000) {
                snprintf(error, error_size, "%s=%.64s: not a whole number of ms in 1..600000", name,
                         text);
                return false;
        }
        config->timeout_ms = value;
        return true;
}

/* Reads at most CA_MAX_BYTES of a regular file into `out` (size
 * CA_MAX_BYTES + 1, NUL-terminated).  O_NONBLOCK: a FIFO cannot hang the
 * start.  The byte count, or -errno; -EINVAL with `why` set for a
 * non-regular file. */
static ssize_t read_ca(const char *path, char *out, const char **why)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        size_t n = 0;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                *why = S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file";
                return -EINVAL;
        }
        while (n < CA_MAX_BYTES) {
                ssize_t got = read(fd, out + n, CA_MAX_BYTES - n);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0)
                        return -errno;
                if (got == 0)
                        break;
                n += (size_t)got;
        }
        out[n] = '\0';
        return (ssize_t)n;
}

/* The CA bundle must be there and be PEM now, not at the first send:
 * a directory used to be exit 1, a non-PEM file accepted outright. */
static bool resolve_ca(const struct lookup *env, struct export_config *config, char *error,
                       size_t error_size)
{
        const char *name, *path = env_either(env, "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE",
                                             "OTEL_EXPORTER_OTLP_CERTIFICATE", &name);
        char *pem;
        const char *why = NULL;
        ssize_t r;

        config->ca_file[0] = '\0';
        if (!path || !config->tls)
                return true;
        if (strlen(path) >= sizeof(config->ca_file))
                return fail(error, error_size, "%s=%.200s: cannot read the CA file: %s", name, path,
                            strerror(ENAMETOOLONG));
        pem = malloc(CA_MAX_BYTES + 1);
        if (!pem)
                return fail(error, error_size, "%s: out of memory", name);
        r = read_ca(path, pem, &why);
        if (r >= 0 && !memmem(pem, (size_t)r, PEM_CERTIFICATE, strlen(PEM_CERTIFICATE))) {
                why = "no PEM certificate (" PEM_CERTIFICATE ") in it";
                r = -EINVAL;
        }
        free(pem);
        if (r < 0)
                return fail(error, error_size, "%s=%.200s: bad CA file: %s", name, path,
                            why ? why : strerror((int)-r));
        snprintf(config->ca_file, sizeof(config->ca_file), "%s", path);
        return true;
}

/* SPLUNK_PROFILER_ENABLED: 1 true, 0 false, -1 unset; -2 invalid. */
static int env_enabled(const struct lookup *env)
{
        static const char *const yes[] = {"true", "1", "yes", "on"};
        static const char *const no[] = {"false", "0", "no", "off"};
        const char *text = env_nonempty(env, "SPLUNK_PROFILER_ENABLED");

        if (!text)
                return -1;
        for (size_t i = 0; i < 4; i++) {
                if (strcasecmp(text, yes[i]) == 0)
                        return 1;
                if (strcasecmp(text, no[i]) == 0)
                        return 0;
        }
        return -2;
}

/* Decides on/off and the endpoint; validates the SPLUNK_* variables even
 * when a flag overrides them, so a typo never goes unnoticed. */
static bool resolve_destination(const struct lookup *env, struct export_config *config, char *error,
                                size_t error_size)
{
        const char *env_endpoint = env_nonempty(env, "SPLUNK_PROFILER_LOGS_ENDPOINT");
        int enabled = env_enabled(env);
        char why[400];

        if (enabled == -2)
                return fail(error, error_size, "SPLUNK_PROFILER_ENABLED=%.32s: not true or false",
                            env_nonempty(env, "SPLUNK_PROFILER_ENABLED"));
        if (env_endpoint && !export_config__parse_endpoint(config, env_endpoint, why, sizeof(why)))
                return fail(error, error_size, "SPLUNK_PROFILER_LOGS_ENDPOINT: %s", why);
        if (config->endpoint_flag && config->no_export_flag)
                return fail(error, error_size, "%s",
                            "--endpoint and --no-export exclude each other");
        if (config->endpoint_flag) {
                if (!export_config__parse_endpoint(config, config->endpoint_flag, why, sizeof(why)))
                        return fail(error, error_size, "--endpoint: %s", why);
                config->enabled = true;
                return true;
        }
        config->enabled =
            !config->no_export_flag && (enabled == 1 || (enabled == -1 && env_endpoint != NULL));
        if (!env_endpoint)
                (void)export_config__parse_endpoint(config, EXPORT_DEFAULT_ENDPOINT, why,
                                                    sizeof(why));
        return true;
}

static bool resolve(const struct lookup *env, struct export_config *config, int64_t interval_ms,
                    char *error, size_t error_size)
{
        if (!resolve_destination(env, config, error, error_size))
                return false;
        if (config->flush_interval_ms == 0)
                config->flush_interval_ms = interval_ms > MIN_FLUSH_MS ? interval_ms : MIN_FLUSH_MS;
        if (config->memory_mb == 0)
                config->memory_mb = EXPORT_DEFAULT_MEMORY_MB;
        if (!config->enabled)
                return true;
        return resolve_headers(env, config, error, error_size) &&
               resolve_timeout(env, config, error, error_size) &&
               resolve_ca(env, config, error, error_size);
}

bool export_config__resolve_from(struct export_config *config, int64_t interval_ms,
                                 export_lookup_fn lookup, void *arg, char *error, size_t error_size)
{
        struct lookup env = {lookup, arg};

        return resolve(&env, config, interval_ms, error, error_size);
}

bool export_config__same_connection(const struct export_config *a, const struct export_config *b)
{
        if (strcmp(a->endpoint, b->endpoint) != 0 || strcmp(a->ca_file, b->ca_file) != 0 ||
            a->timeout_ms != b->timeout_ms || a->n_headers != b->n_headers)
                return false;
        for (size_t i = 0; i < a->n_headers; i++)
                if (strcmp(a->headers[i].key, b->headers[i].key) != 0 ||
                    strcmp(a->headers[i].value, b->headers[i].value) != 0)
                        return false;
        return true;
}
