/* otlp_target.c — see otlp_target.h.
 *
 * The same sample goes to the run's file profile and, through
 * otlp_target__record, to this per-target builder: only the envelope
 * differs (no sample_type/values, no period, one profile per record).
 * Encoding (pprof, gzip, base64) happens here on the tracer thread, after
 * every thread has been resumed; it costs tens of microseconds per record
 * and lets the queue account for exact bytes.  Sending is the exporter
 * thread's job. */
#include "otlp/otlp_target.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otlp/exporter.h"
#include "otlp/otlp_logs.h"
#include "otlp/otlp_resource.h"
#include "pprof/profile_builder.h"
#include "symbolize/symbolizer.h"
#include "unwind/stack_merge.h"
#include "util/log.h"
#include "util/clock.h"

#define CACHE_SLOTS        4096
#define MAX_RECORD_SAMPLES 20000
#define MAX_RECORD_FRAMES  (2 * 1000 * 1000)
/* Base64 body cap: well under HEC's 2 MiB default request size. */
#define MAX_BODY_BYTES   (1536u * 1024)
#define RECORD_MAX_DEPTH 4096

struct otlp_target *otlp_target__new(pid_t pid, int64_t period_ms, uint64_t main_code)
{
        struct otlp_target *target = calloc(1, sizeof(*target));

        if (!target)
                return NULL;
        target->pid = pid;
        target->main_code = main_code;
        target->recorder.period_ms = period_ms;
        target->resource = otlp_resource__new(pid, NULL);
        if (!target->resource || location_cache__init(&target->locations, CACHE_SLOTS) < 0) {
                otlp_target__free(target);
                return NULL;
        }
        return target;
}

void otlp_target__update_resource(struct otlp_target *target, const struct process_context *context)
{
        struct otlp_resource *resource =
            otlp_resource__new_with_context(target->pid, NULL, context);

        if (!resource)
                return;
        otlp_resource__unref(target->resource);
        target->resource = resource;
}

void otlp_target__free(struct otlp_target *target)
{
        if (!target)
                return;
        profile_builder__free(target->builder);
        location_cache__release(&target->locations);
        otlp_resource__unref(target->resource);
        free(target);
}

/* A fresh builder, recorder and (emptied) location cache. */
static int start_record(struct otlp_target *target, struct address_space *space)
{
        int64_t period_ms = target->recorder.period_ms;

        target->builder = profile_builder__new(NULL);
        if (!target->builder)
                return -ENOMEM;
        target->recorder =
            (struct sample_recorder){.builder = target->builder, .period_ms = period_ms};
        if (space)
                location_cache__validate(&target->locations, ~address_space__generation(space));
        sample_recorder__add_main_mapping(&target->recorder, space, target->main_code);
        target->frames = 0;
        target->first_time_ns = 0;
        return 0;
}

int otlp_target__record(struct otlp_target *target, struct address_space *space,
                        const struct sample_record *record)
{
        size_t frames =
            record->merged && record->merged->n ? record->merged->n : record->stack->n_pcs;
        int r;

        if (!target->builder && (r = start_record(target, space)) < 0)
                return r;
        r = sample_recorder__record(&target->recorder, space, &target->locations, record);
        if (r < 0)
                return r;
        if (!target->first_time_ns)
                target->first_time_ns = record->time_ns;
        target->frames += (int64_t)(frames < RECORD_MAX_DEPTH ? frames : RECORD_MAX_DEPTH);
        return 0;
}

static void flush(struct otlp_target *target, struct exporter *exporter)
{
        struct export_entry *entry = NULL;
        uint64_t begin = clock__ns(CLOCK_MONOTONIC);
        int r;

        r = export_entry__new(target->builder, target->resource, target->first_time_ns,
                              clock__ns(CLOCK_REALTIME),
                              profile_builder__frame_count(target->builder), &entry);
        profile_builder__free(target->builder);
        target->builder = NULL;
        target->encode_ns += clock__ns(CLOCK_MONOTONIC) - begin;
        if (r < 0) {
                log_warning("PID %d: cannot encode a profiling record: %s", (int)target->pid,
                            strerror(-r));
                return;
        }
        if (entry->body_len > MAX_BODY_BYTES) {
                /* Cannot happen with the sample caps below, short of
                 * pathological symbol names; never send what HEC drops. */
                target->too_large++;
                log_warning("PID %d: profiling record of %zu bytes dropped (limit %u)",
                            (int)target->pid, entry->body_len, MAX_BODY_BYTES);
                export_entry__free(entry);
                return;
        }
        target->records++;
        exporter__submit(exporter, entry);
}

/* Whether the open record is complete after a tick at `tick_ns`: once
 * the next tick (one period later) would come half a period short of the
 * flush interval after the record's first sample or later.  At the
 * planned pace that is exactly flush / period ticks; when ticks run late
 * (a loaded host, many threads) a record still spans the flush interval
 * by the samples' own clock, not a count of ticks that took longer.  A
 * clock set back closes the record too. */
static bool record_due(const struct otlp_target *target, uint64_t tick_ns, uint64_t flush_ns)
{
        uint64_t period_ns = (uint64_t)target->recorder.period_ms * 1000000u;

        if (!target->first_time_ns)
                return false;
        if (tick_ns < target->first_time_ns)
                return true;
        return tick_ns - target->first_time_ns + period_ns + period_ns / 2 >= flush_ns;
}

void otlp_target__after_tick(struct otlp_target *target, struct exporter *exporter,
                             uint64_t tick_ns, uint64_t flush_ns, bool force)
{
        bool full;

        if (!target->builder || profile_builder__sample_count(target->builder) == 0)
                return;
        full = profile_builder__sample_count(target->builder) >= MAX_RECORD_SAMPLES ||
               target->frames >= MAX_RECORD_FRAMES;
        if (force || full || record_due(target, tick_ns, flush_ns))
                flush(target, exporter);
}
