/* process_context.c — see process_context.h.
 *
 * Discovery: /proc/PID/maps lines named "/memfd:OTEL_CTX" (memfd, not
 * renamed), "[anon_shmem:OTEL_CTX]" (memfd renamed by prctl) or
 * "[anon:OTEL_CTX]" (anonymous mapping renamed), as OTEP 4719 lists them.
 *
 * Reading: header (signature, version 2, published-at non-zero), then the
 * payload from its pointer, then published-at again; a change means the
 * writer was mid-update and the read is retried (PROCESS_CONTEXT_RETRIES
 * times per poll, then the next poll tries again).  published-at is the
 * cache key: an unchanged one is not re-read.
 *
 * Decoding: protobuf-c recurses once per nested message and has no depth
 * limit, so a payload is first walked by wire format (nested_depth_ok)
 * and rejected when AnyValue nesting goes deeper than DECODE_MAX_DEPTH. */
#include "context/process_context.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "proto/process_context.pb-c.h"
#include "symbolize/proc_maps.h"
#include "util/cleanup.h"
#include "util/log.h"

#define MAPS_MAX_LINES   200000
#define DECODE_MAX_DEPTH 12

typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext ProcessContext;

void process_context__init(struct process_context *context, pid_t pid)
{
        memset(context, 0, sizeof(*context));
        context->pid = pid;
}

static void forget_payload(struct process_context *context)
{
        for (size_t i = 0; i < context->n_attrs; i++) {
                free(context->attrs[i].key);
                free(context->attrs[i].str);
        }
        context->n_attrs = 0;
        for (size_t i = 0; i < context->n_keys; i++)
                free(context->keys[i]);
        context->n_keys = 0;
        free(context->schema_version);
        context->schema_version = NULL;
}

void process_context__clear(struct process_context *context)
{
        forget_payload(context);
        context->published_at = 0;
}

bool process_context__maps_name(const char *path)
{
        static const char *const names[] = {"/memfd:OTEL_CTX", "[anon_shmem:OTEL_CTX]",
                                            "[anon:OTEL_CTX]"};

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                size_t n = strlen(names[i]);
                /* "/memfd:OTEL_CTX_OTHER" is someone else's. */
                if (strncmp(path, names[i], n) == 0 && (path[n] == '\0' || path[n] == '\n' ||
                                                        strncmp(path + n, " (deleted)", 10) == 0))
                        return true;
        }
        return false;
}

const char *process_context_header__check(const void *bytes, size_t len, uint32_t *payload_size,
                                          uint64_t *payload, uint64_t *published_at)
{
        const uint8_t *b = bytes;
        uint32_t version;

        if (len < PROCESS_CONTEXT_HEADER_SIZE)
                return "short header";
        if (memcmp(b, PROCESS_CONTEXT_SIGNATURE, 8) != 0)
                return "bad signature";
        memcpy(&version, b + 8, 4);
        if (version != PROCESS_CONTEXT_VERSION)
                return "unsupported version";
        memcpy(payload_size, b + 12, 4);
        memcpy(published_at, b + 16, 8);
        memcpy(payload, b + 24, 8);
        if (*payload_size > PROCESS_CONTEXT_MAX_PAYLOAD)
                return "payload too large";
        return NULL;
}

/* --- bounded wire-format walk ------------------------------------------ */

enum pb_kind { PB_CONTEXT, PB_RESOURCE, PB_KEYVALUE, PB_ANYVALUE, PB_ARRAY, PB_KVLIST, PB_OPAQUE };

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
        *v = 0;
        for (int shift = 0; shift < 64 && *p < end; shift += 7) {
                uint8_t byte = *(*p)++;
                *v |= (uint64_t)(byte & 0x7f) << shift;
                if (!(byte & 0x80))
                        return true;
        }
        return false;
}

/* Which message a length-delimited field of `kind` holds. */
static enum pb_kind child_kind(enum pb_kind kind, uint64_t field)
{
        switch (kind) {
        case PB_CONTEXT:
                return field == 1 ? PB_RESOURCE : field == 2 ? PB_KEYVALUE : PB_OPAQUE;
        case PB_RESOURCE:
                return field == 1 ? PB_KEYVALUE : PB_OPAQUE;
        case PB_KEYVALUE:
                return field == 2 ? PB_ANYVALUE : PB_OPAQUE;
        case PB_ANYVALUE:
                return field == 5 ? PB_ARRAY : field == 6 ? PB_KVLIST : PB_OPAQUE;
        case PB_ARRAY:
                return field == 1 ? PB_ANYVALUE : PB_OPAQUE;
        case PB_KVLIST:
                return field == 1 ? PB_KEYVALUE : PB_OPAQUE;
        default:
                return PB_OPAQUE;
        }
}

/* Whether the nesting of `bytes` stays within DECODE_MAX_DEPTH and its
 * framing is sound; recursion is bounded by that depth. */
static bool nested_depth_ok(const uint8_t *p, const uint8_t *end, enum pb_kind kind, int depth)
{
        if (depth > DECODE_MAX_DEPTH)
                return false;
        while (p < end) {
                uint64_t tag, v;
                if (!varint(&p, end, &tag))
                        return false;
                switch (tag & 7) {
                case 0:
                        if (!varint(&p, end, &v))
                                return false;
                        break;
                case 1:
                        if (end - p < 8)
                                return false;
                        p += 8;
                        break;
                case 5:
                        if (end - p < 4)
                                return false;
                        p += 4;
                        break;
                case 2: {
                        if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
                                return false;
                        enum pb_kind child = child_kind(kind, tag >> 3);
                        if (child != PB_OPAQUE && !nested_depth_ok(p, p + v, child, depth + 1))
                                return false;
                        p += v;
                        break;
                }
                default:
                        return false;
                }
        }
        return true;
}

/* --- decode ----------------------------------------------------------- */

static char *copy_value(const char *s)
{
        size_t n = 0;
        char *copy;

        while (s && n < PROCESS_CONTEXT_MAX_VALUE && s[n])
                n++;
        copy = malloc(n + 1);

        if (copy) {
                memcpy(copy, s ? s : "", n);
                copy[n] = '\0';
        }
        return copy;
}

static void add_attr(struct process_context *context, const KeyValue *kv)
{
        const AnyValue *v = kv->value;
        struct process_context_attr attr = {0};
        char num[64];

        if (!kv->key || !kv->key[0] || !v || context->n_attrs >= PROCESS_CONTEXT_MAX_ATTRS)
                return;
        switch (v->value_case) {
        case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
                attr.str = copy_value(v->string_value);
                break;
        case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
                attr.num = v->int_value;
                break;
        case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
                attr.str = copy_value(v->bool_value ? "true" : "false");
                break;
        case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
                snprintf(num, sizeof(num), "%.17g", v->double_value);
                attr.str = copy_value(num);
                break;
        default:
                return; /* arrays, maps and bytes are not resource attributes we send */
        }
        attr.key = copy_value(kv->key);
        if (!attr.key ||
            (v->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE &&
             !attr.str)) {
                free(attr.key);
                free(attr.str);
                return;
        }
        /* Keys must be unique; the last one wins. */
        for (size_t i = 0; i < context->n_attrs; i++)
                if (strcmp(context->attrs[i].key, attr.key) == 0) {
                        free(context->attrs[i].key);
                        free(context->attrs[i].str);
                        context->attrs[i] = attr;
                        return;
                }
        context->attrs[context->n_attrs++] = attr;
}

static void add_threadlocal(struct process_context *context, const KeyValue *kv)
{
        const AnyValue *v = kv->value;

        if (!kv->key || !v)
                return;
        if (strcmp(kv->key, "threadlocal.schema_version") == 0 &&
            v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE) {
                free(context->schema_version);
                context->schema_version = copy_value(v->string_value);
        } else if (strcmp(kv->key, "threadlocal.attribute_key_map") == 0 &&
                   v->value_case ==
                       OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE &&
                   v->array_value) {
                const Opentelemetry__Proto__Common__V1__ArrayValue *a = v->array_value;
                for (size_t i = 0; i < context->n_keys; i++)
                        free(context->keys[i]);
                context->n_keys = 0;
                for (size_t i = 0; i < a->n_values && i < PROCESS_CONTEXT_MAX_KEYS; i++) {
                        const AnyValue *k = a->values[i];
                        /* A non-string entry keeps its index, unnamed. */
                        bool str =
                            k &&
                            k->value_case ==
                                OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
                        context->keys[context->n_keys++] =
                            str && k->string_value[0] ? copy_value(k->string_value) : NULL;
                }
        }
}

int process_context__decode(struct process_context *context, const uint8_t *bytes, size_t len)
{
        ProcessContext *message;

        if (len > PROCESS_CONTEXT_MAX_PAYLOAD ||
            !nested_depth_ok(bytes, bytes + len, PB_CONTEXT, 0))
                return -EBADMSG;
        message = opentelemetry__proto__processcontext__v1development__process_context__unpack(
            NULL, len, bytes);
        if (!message)
                return -EBADMSG;
        forget_payload(context);
        if (message->resource)
                for (size_t i = 0; i < message->resource->n_attributes; i++)
                        add_attr(context, message->resource->attributes[i]);
        for (size_t i = 0; i < message->n_attributes; i++)
                add_threadlocal(context, message->attributes[i]);
        opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(message,
                                                                                            NULL);
        return 0;
}

const char *process_context__key(const struct process_context *context, unsigned index)
{
        return index < context->n_keys ? context->keys[index] : NULL;
}

bool process_context__tls_schema_ok(const struct process_context *context)
{
        return !context->schema_version ||
               strcmp(context->schema_version, THREADLOCAL_SCHEMA_DEV) == 0 ||
               strcmp(context->schema_version, THREADLOCAL_SCHEMA_V1) == 0;
}

/* --- reading the target ------------------------------------------------- */

static void context__warn(struct process_context *context, const char *why)
{
        if (context->warned)
                return;
        context->warned = true;
        log_warning("PID %d: ignoring OpenTelemetry process context at 0x%" PRIx64 ": %s",
                    (int)context->pid, context->header, why);
}

static uint64_t find_mapping(pid_t pid, const char *maps_text, size_t maps_len)
{
        _cleanup_fclose_ FILE *maps = proc_maps__open(pid, maps_text, maps_len);
        char line[512];
        bool line_start = true;

        for (int n = 0; maps && n < MAPS_MAX_LINES && fgets(line, sizeof(line), maps); n++) {
                unsigned long long lo, hi;
                int at = 0;
                bool first = line_start;
                line_start = strchr(line, '\n') != NULL;
                if (!first || sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 ||
                    !at || hi - lo < PROCESS_CONTEXT_HEADER_SIZE)
                        continue;
                if (process_context__maps_name(line + at))
                        return lo;
        }
        return 0;
}

/* One consistent read of the payload; 1 when it changed and was decoded,
 * 0 when unchanged or mid-update, or -errno (bad: warn). */
static int read_payload(struct process_context *context, const char **why)
{
        uint8_t header[PROCESS_CONTEXT_HEADER_SIZE];
        uint32_t size;
        uint64_t payload, published, again;

        for (int attempt = 0; attempt < PROCESS_CONTEXT_RETRIES; attempt++) {
                if (remote_memory__read(context->pid, context->header, header, sizeof(header)) !=
                    (ssize_t)sizeof(header)) {
                        *why = "unreadable";
                        return -EFAULT;
                }
                *why = process_context_header__check(header, sizeof(header), &size, &payload,
                                                     &published);
                if (*why)
                        return -EBADMSG;
                if (published == 0)
                        continue; /* an update is in progress */
                if (published == context->published_at)
                        return 0;
                _cleanup_free_ uint8_t *bytes = malloc(size ? size : 1);
                if (!bytes)
                        return -ENOMEM;
                if (size &&
                    remote_memory__read(context->pid, payload, bytes, size) != (ssize_t)size)
                        continue; /* maybe freed by an update: try again */
                if (remote_memory__read(context->pid, context->header + 16, &again,
                                        sizeof(again)) != (ssize_t)sizeof(again))
                        continue;
                if (again != published)
                        continue;
                if (process_context__decode(context, bytes, size) < 0) {
                        *why = "payload is not a ProcessContext";
                        context->published_at = published; /* not again until it changes */
                        return -EBADMSG;
                }
                context->published_at = published;
                return 1;
        }
        return 0;
}

bool process_context__refresh(struct process_context *context, uint64_t now_ns, bool rediscover,
                              uint64_t maps_generation, const char *maps_text, size_t maps_len)
{
        const char *why = NULL;
        int r;

        if (rediscover) {
                context->header = 0;
                context->scanned_generation = 0;
                if (context->published_at || context->n_attrs) {
                        process_context__clear(context);
                        context->changes++;
                }
        }
        if (!context->header) {
                if (maps_generation && maps_generation == context->scanned_generation &&
                    !rediscover)
                        return false;
                context->header = find_mapping(context->pid, maps_text, maps_len);
                context->scanned_generation = context->header ? 0 : maps_generation;
                if (!context->header)
                        return false;
                context->next_check_ns = 0;
        }
        if (now_ns < context->next_check_ns)
                return false;
        context->next_check_ns = now_ns + PROCESS_CONTEXT_CHECK_NS;
        r = read_payload(context, &why);
        if (r < 0 && why) {
                context__warn(context, why);
                if (r == -EFAULT) /* unmapped: look for a new one when the maps change */
                        context->header = 0;
                return false;
        }
        if (r > 0) {
                log_info("PID %d: OpenTelemetry process context: %zu resource attributes, %zu "
                         "thread attribute keys, schema %s",
                         (int)context->pid, context->n_attrs, context->n_keys,
                         context->schema_version ? context->schema_version : "(none)");
                context->changes++;
                return true;
        }
        return false;
}
