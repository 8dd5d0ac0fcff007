/* otlp_logs.c — see otlp_logs.h.
 *
 * The request is assembled from protobuf-c structs that point into the
 * entries and the (immutable, shared) resources, so nothing is copied
 * until protobuf_c_message_pack writes the bytes once.  Entries of the
 * same target that sit in one request share one ResourceLogs.
 *
 * LogRecord, per ../shared/reference/splunk-wire-format.md §4-5:
 * time_unix_nano = the record's first sample, observed_time_unix_nano =
 * when it was made, severity and flags unset, trace_id/span_id empty,
 * body.string_value = the base64 text, and five attributes, all strings
 * but the int frame count. */
#include "otlp/otlp_logs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/gzip.h"
#include "otlp/otlp_resource.h"
#include "pprof/profile_builder.h"
#include "proto/otlp_logs_service.pb-c.h"
#include "util/cleanup.h"

#define N_RECORD_ATTRS 5
/* A LogRecord's envelope around its body, generously. */
#define RECORD_OVERHEAD 320

typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Logs__V1__LogRecord LogRecord;
typedef Opentelemetry__Proto__Logs__V1__ScopeLogs ScopeLogs;
typedef Opentelemetry__Proto__Logs__V1__ResourceLogs ResourceLogs;

size_t export_entry__size(const struct export_entry *entry)
{
        return sizeof(*entry) + entry->body_len + 1;
}

int export_entry__new(struct profile_builder *builder, struct otlp_resource *resource,
                      uint64_t time_ns, uint64_t observed_ns, int64_t frame_count,
                      struct export_entry **out)
{
        _cleanup_free_ uint8_t *raw = NULL;
        _cleanup_free_ uint8_t *gz = NULL;
        size_t raw_len, gz_len;
        struct export_entry *entry;
        int r;

        r = profile_builder__encode(builder, &raw, &raw_len);
        if (r < 0)
                return r;
        r = gzip__compress(raw, raw_len, &gz, &gz_len);
        if (r < 0)
                return r;
        entry = malloc(sizeof(*entry) + base64__encoded_size(gz_len));
        if (!entry)
                return -ENOMEM;
        *entry = (struct export_entry){
            .resource = otlp_resource__ref(resource),
            .time_ns = time_ns,
            .observed_ns = observed_ns,
            .frame_count = frame_count,
            .n_samples = profile_builder__sample_count(builder),
        };
        entry->body_len = base64__encode(gz, gz_len, entry->body);
        *out = entry;
        return 0;
}

void export_entry__free(struct export_entry *entry)
{
        if (!entry)
                return;
        otlp_resource__unref(entry->resource);
        free(entry);
}

void export_entry__free_list(struct export_entry *list)
{
        while (list) {
                struct export_entry *next = list->next;
                export_entry__free(list);
                list = next;
        }
}

size_t otlp_logs__entry_wire_size(const struct export_entry *entry)
{
        size_t resource = 0;

        for (size_t i = 0; i < entry->resource->n_attrs; i++) {
                const struct otlp_attr *attr = &entry->resource->attrs[i];
                resource += strlen(attr->key) + (attr->str ? strlen(attr->str) : 10) + 12;
        }
        return entry->body_len + RECORD_OVERHEAD + resource;
}

/* One LogRecord with everything it points to. */
struct record_message {
        LogRecord record;
        AnyValue body;
        KeyValue kv[N_RECORD_ATTRS];
        AnyValue values[N_RECORD_ATTRS];
        KeyValue *kv_ptrs[N_RECORD_ATTRS];
};

static void set_string(KeyValue *kv, AnyValue *value, const char *key, const char *text)
{
        opentelemetry__proto__common__v1__any_value__init(value);
        value->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        value->string_value = (char *)text;
        opentelemetry__proto__common__v1__key_value__init(kv);
        kv->key = (char *)key;
        kv->value = value;
}

static void record_message__fill(struct record_message *m, const struct export_entry *entry)
{
        static const char *const keys[] = {"com.splunk.sourcetype", "profiling.data.format",
                                           "profiling.data.type",
                                           "profiling.instrumentation.source"};
        static const char *const texts[] = {"otel.profiling", "pprof-gzip-base64", "cpu",
                                            "continuous"};

        opentelemetry__proto__logs__v1__log_record__init(&m->record);
        m->record.time_unix_nano = entry->time_ns;
        m->record.observed_time_unix_nano = entry->observed_ns;
        opentelemetry__proto__common__v1__any_value__init(&m->body);
        m->body.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        m->body.string_value = (char *)entry->body;
        m->record.body = &m->body;
        for (size_t i = 0; i < 4; i++)
                set_string(&m->kv[i], &m->values[i], keys[i], texts[i]);
        set_string(&m->kv[4], &m->values[4], "profiling.data.total.frame.count", NULL);
        m->values[4].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
        m->values[4].int_value = entry->frame_count;
        /* Order as the SDKs send them: sourcetype, format, type, count, source. */
        m->kv_ptrs[0] = &m->kv[0];
        m->kv_ptrs[1] = &m->kv[1];
        m->kv_ptrs[2] = &m->kv[2];
        m->kv_ptrs[3] = &m->kv[4];
        m->kv_ptrs[4] = &m->kv[3];
        m->record.n_attributes = N_RECORD_ATTRS;
        m->record.attributes = m->kv_ptrs;
}

/* Everything the request points to, freed in one go. */
struct request_parts {
        size_t n_entries, n_groups;
        struct record_message *records;
        LogRecord **record_ptrs; /* grouped by resource, in first-seen order */
        ResourceLogs *resource_logs;
        ResourceLogs **resource_log_ptrs;
        ScopeLogs *scope_logs;
        ScopeLogs **scope_log_ptrs;
        size_t *group_of; /* per entry */
        size_t *group_count;
        Opentelemetry__Proto__Common__V1__InstrumentationScope scope;
};

static void request_parts__free(struct request_parts *p)
{
        free(p->records);
        free(p->record_ptrs);
        free(p->resource_logs);
        free(p->resource_log_ptrs);
        free(p->scope_logs);
        free(p->scope_log_ptrs);
        free(p->group_of);
        free(p->group_count);
}

static int request_parts__alloc(struct request_parts *p, size_t n)
{
        p->records = calloc(n, sizeof(*p->records));
        p->record_ptrs = calloc(n, sizeof(*p->record_ptrs));
        p->resource_logs = calloc(n, sizeof(*p->resource_logs));
        p->resource_log_ptrs = calloc(n, sizeof(*p->resource_log_ptrs));
        p->scope_logs = calloc(n, sizeof(*p->scope_logs));
        p->scope_log_ptrs = calloc(n, sizeof(*p->scope_log_ptrs));
        p->group_of = calloc(n, sizeof(*p->group_of));
        p->group_count = calloc(n, sizeof(*p->group_count));
        return p->records && p->record_ptrs && p->resource_logs && p->resource_log_ptrs &&
                       p->scope_logs && p->scope_log_ptrs && p->group_of && p->group_count
                   ? 0
                   : -ENOMEM;
}

/* Assigns each entry a group (one per distinct resource). */
static void request_parts__group(struct request_parts *p, const struct export_entry *list,
                                 const struct otlp_resource **resources)
{
        size_t e = 0;

        for (const struct export_entry *entry = list; entry; entry = entry->next, e++) {
                size_t g = 0;
                while (g < p->n_groups && resources[g] != entry->resource)
                        g++;
                if (g == p->n_groups)
                        resources[p->n_groups++] = entry->resource;
                p->group_of[e] = g;
                p->group_count[g]++;
                record_message__fill(&p->records[e], entry);
        }
}

static void request_parts__link(struct request_parts *p, const struct otlp_resource **resources)
{
        size_t offset = 0;

        opentelemetry__proto__common__v1__instrumentation_scope__init(&p->scope);
        p->scope.name = (char *)OTLP_SCOPE_NAME;
        p->scope.version = (char *)OTLP_SCOPE_VERSION;
        for (size_t g = 0; g < p->n_groups; g++) {
                ScopeLogs *scope_logs = &p->scope_logs[g];
                ResourceLogs *resource_logs = &p->resource_logs[g];
                size_t filled = 0;

                opentelemetry__proto__logs__v1__scope_logs__init(scope_logs);
                scope_logs->scope = &p->scope;
                scope_logs->log_records = &p->record_ptrs[offset];
                for (size_t e = 0; e < p->n_entries; e++)
                        if (p->group_of[e] == g)
                                p->record_ptrs[offset + filled++] = &p->records[e].record;
                scope_logs->n_log_records = filled;
                offset += filled;
                p->scope_log_ptrs[g] = scope_logs;
                opentelemetry__proto__logs__v1__resource_logs__init(resource_logs);
                resource_logs->resource =
                    (Opentelemetry__Proto__Resource__V1__Resource *)&resources[g]->message;
                resource_logs->n_scope_logs = 1;
                resource_logs->scope_logs = &p->scope_log_ptrs[g];
                p->resource_log_ptrs[g] = resource_logs;
        }
}

int otlp_logs__encode_request(const struct export_entry *list, uint8_t **out, size_t *out_len)
{
        Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest request =
            OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_SERVICE_REQUEST__INIT;
        struct request_parts parts = {0};
        _cleanup_free_ const struct otlp_resource **resources = NULL;
        int r = -ENOMEM;

        for (const struct export_entry *entry = list; entry; entry = entry->next)
                parts.n_entries++;
        resources = calloc(parts.n_entries ? parts.n_entries : 1, sizeof(*resources));
        if (resources && request_parts__alloc(&parts, parts.n_entries ? parts.n_entries : 1) == 0) {
                request_parts__group(&parts, list, resources);
                request_parts__link(&parts, resources);
                request.n_resource_logs = parts.n_groups;
                request.resource_logs = parts.resource_log_ptrs;
                *out_len =
                    opentelemetry__proto__collector__logs__v1__export_logs_service_request__get_packed_size(
                        &request);
                *out = malloc(*out_len ? *out_len : 1);
                if (*out) {
                        opentelemetry__proto__collector__logs__v1__export_logs_service_request__pack(
                            &request, *out);
                        r = 0;
                }
        }
        request_parts__free(&parts);
        return r;
}
