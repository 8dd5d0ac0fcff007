/* otlp_target.h — the Splunk side of one profiled process: its resource,
 * and the Splunk-style pprof builder (no sample_type, no values) that
 * collects its samples until the next flush turns them into one record.
 *
 * Tracer thread only.  The builder, its location cache and its recorder
 * live exactly as long as one record: each flush starts a fresh builder
 * with an emptied cache, since a cache's Location ids belong to one
 * builder. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "context/process_context.h"
#include "pprof/location_cache.h"
#include "pprof/sample_recorder.h"

struct address_space;
struct exporter;
struct otlp_resource;

struct otlp_target {
        pid_t pid;
        struct otlp_resource *resource;
        struct profile_builder *builder; /* NULL between records */
        struct sample_recorder recorder;
        struct location_cache locations;
        uint64_t main_code;     /* an address in the main executable */
        uint64_t first_time_ns; /* first sample of the record, Unix ns */
        int64_t frames;         /* stack depth over the record's samples: its size cap */
        uint64_t encode_ns;     /* time spent encoding records, total */
        uint64_t records, too_large;
};

/* NULL when out of memory.  `main_code`: an address in the executable
 * (its mapping comes first in the profile). */
struct otlp_target *otlp_target__new(pid_t pid, int64_t period_ms, uint64_t main_code);
void otlp_target__free(struct otlp_target *target);

/* Rebuilds the resource with the target's (changed) OTEP 4719 process
 * context; records already queued keep the old one.  The old resource
 * stays when out of memory. */
void otlp_target__update_resource(struct otlp_target *target,
                                  const struct process_context *context);

/* Records one sample into the current record.  0 or -ENOMEM. */
int otlp_target__record(struct otlp_target *target, struct address_space *space,
                        const struct sample_record *record);

/* Called after every tick, with the tick's time (CLOCK_REALTIME, the
 * clock of the samples' source.event.time): the current record goes to
 * `exporter` once its first sample is `flush_ns` old (see record_due in
 * otlp_target.c), when it is full, or when `force`.  A record with no
 * sample is not sent. */
void otlp_target__after_tick(struct otlp_target *target, struct exporter *exporter,
                             uint64_t tick_ns, uint64_t flush_ns, bool force);
