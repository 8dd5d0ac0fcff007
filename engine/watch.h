/* watch.h — `splunk-profd --watch`: the tracer thread's side of daemon
 * mode.  Everything here runs on the tracer thread (the only one making
 * ptrace calls): discovery and attaching, following forks, re-examining
 * execs, releasing single targets, dropping exited ones, applying a
 * SIGHUP reload, and the periodic health line. */
#pragma once

#include "engine/discovery.h"
#include "engine/facts_reader.h"
#include "engine/registry.h"

struct watch {
        struct discovery discovery;
        struct facts_reader facts; /* discovery's looks, off the tracer */
        uint64_t next_health_ns;
        /* The counters at the last health line, for its per-period values. */
        uint64_t health_samples, health_skipped;
        uint64_t health_ticks, health_ticks_missed, health_samples_asked;
        uint64_t attached, released, exited, forks;
        uint64_t freed_since_trim, last_trim_ns; /* heap trimming after exits */
        uint64_t prepared_at_tick;      /* last tick after which a late set-up was forced */
        uint64_t events_checked_ns;     /* last look for ptrace events during a pass */
        uint64_t capture_bytes_at_trim; /* run_stats.capture_bytes_freed at the last trim */
};

struct watch *watch__new(void);
void watch__free(struct watch *watch);
/* The connector's descriptor for the tracer's poll, or -1. */
int watch__fd(const struct registry *registry);
/* Between ticks: drop exited and released targets, set up new ones,
 * discover, log health.  `readable`: the connector fd polled readable.
 * New targets are set up one at a time, with ptrace events handled
 * between two, until `deadline_ns` (CLOCK_MONOTONIC, the next tick): at
 * least one per tick, the rest on the next calls. */
void watch__maintain(struct registry *registry, uint64_t now_ns, bool readable,
                     uint64_t deadline_ns);
/* Takes the settings main queued on SIGHUP; returns true if the interval changed. */
bool watch__apply_reload(struct registry *registry);

/* ptrace event callbacks (from engine/sampler.c's handler table). */
void watch__on_fork(struct registry *registry, struct target *parent, pid_t child);
void watch__on_exec(struct registry *registry, struct target *target);
