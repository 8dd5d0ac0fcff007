/* otlp_logs.h — Splunk profiling log records and the OTLP
 * ExportLogsServiceRequest that carries them.
 *
 * A record (struct export_entry) is one finished pprof profile of one
 * target: gzip'd, base64'd, with the numbers its LogRecord needs.  Records
 * are built on the tracer thread and travel to the exporter thread through
 * the export queue; the request is built there, one ResourceLogs per
 * target, one ScopeLogs "otel.profiling" each. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct otlp_resource;
struct profile_builder;

#define OTLP_SCOPE_NAME    "otel.profiling"
#define OTLP_SCOPE_VERSION "0.1.0"

struct export_entry {
        struct export_entry *next;
        struct otlp_resource *resource; /* one reference held */
        uint64_t time_ns;               /* first sample of the record, Unix ns */
        uint64_t observed_ns;           /* when the record was made */
        int64_t frame_count;            /* profiling.data.total.frame.count */
        size_t n_samples;
        size_t body_len;
        char body[]; /* base64(gzip(pprof)), NUL-terminated */
};

/* Bytes a queued entry accounts for. */
size_t export_entry__size(const struct export_entry *entry);

/* Encodes `builder` into a new entry holding a new reference to
 * `resource`.  0 or -errno. */
int export_entry__new(struct profile_builder *builder, struct otlp_resource *resource,
                      uint64_t time_ns, uint64_t observed_ns, int64_t frame_count,
                      struct export_entry **out);
void export_entry__free(struct export_entry *entry);
void export_entry__free_list(struct export_entry *list);

/* Packs the entries of `list` (in order) into one serialized
 * ExportLogsServiceRequest.  0 or -ENOMEM. */
int otlp_logs__encode_request(const struct export_entry *list, uint8_t **out, size_t *out_len);

/* The encoded size of one request holding only `entry`, approximately
 * (for batching under the size limit). */
size_t otlp_logs__entry_wire_size(const struct export_entry *entry);
