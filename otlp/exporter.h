/* exporter.h — the exporter thread: takes records off the bounded export
 * queue, packs them into OTLP requests under the gRPC size limit, sends
 * them, and retries with exponential backoff and jitter while the
 * collector says "try again".  The tracer thread only ever calls
 * exporter__submit, which never waits. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct export_config;
struct export_entry;
struct exporter;

struct exporter_stats {
        uint64_t records_sent, samples_sent, requests_sent, bytes_sent;
        uint64_t retries, failed_records, rejected_records;
        uint64_t dropped_records, dropped_samples, unsent_at_exit;
        size_t peak_queue_bytes;
        uint64_t cpu_ns; /* the exporter thread's CPU time */
};

/* Creates the queue and the gRPC channel (nothing connects yet).  NULL
 * with `error` set. */
struct exporter *exporter__new(const struct export_config *config, char *error, size_t error_size);
/* 0 or -errno. */
int exporter__start(struct exporter *exporter);
/* Queues a record (ownership passes); drops the oldest when over budget. */
void exporter__submit(struct exporter *exporter, struct export_entry *entry);
/* Switches to another collector connection (export_config__same_connection:
 * endpoint, TLS, CA file, headers, timeout) without a restart.  The new
 * channel is made here, on the caller's thread; the exporter thread takes
 * it between two requests.  Queued records are kept and go to the new
 * collector; a request already in flight finishes (or times out) against
 * the old one, and is retried against the new one if it failed.  The
 * queue's budget and on/off stay as started.  0, or -EINVAL with `error`
 * set (the old connection then stays). */
int exporter__reconfigure(struct exporter *exporter, const struct export_config *config,
                          char *error, size_t error_size);
/* Asks the thread to send what is queued within `deadline_ms`, then joins
 * it.  Whatever is still unsent after that is counted and discarded. */
void exporter__stop(struct exporter *exporter, int64_t deadline_ms);
/* The counters once the thread has stopped (exporter__stop) or before it
 * started: the summary line. */
void exporter__stats(const struct exporter *exporter, struct exporter_stats *stats);
/* The counters while the thread runs, as of its last request: the copy it
 * sent by message (util/mailbox.h), never its live fields.  One calling
 * thread only (the tracer's health line). */
void exporter__stats_running(struct exporter *exporter, struct exporter_stats *stats);
void exporter__free(struct exporter *exporter);
