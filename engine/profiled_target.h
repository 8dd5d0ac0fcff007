/* profiled_target.h — what the engine hangs on an attached target
 * (target->owner): its address space and unwinder, its location cache,
 * its CPython state, its span-context reader and its Splunk record.
 *
 * Set up once the target is attached (profiled_target__prepare), freed when
 * it exits, execs or is released.  Every function here runs on the tracer
 * thread. */
#pragma once

#include <stdint.h>

#include "context/context_reader.h"
#include "engine/registry.h"
#include "pprof/location_cache.h"

struct profiled_target {
        struct address_space *space;
        struct native_unwinder *unwinder;
        struct location_cache locations;
        uint64_t last_refresh_ns; /* maps last re-read */
        uint64_t last_check_ns;   /* vsize last compared (sampler.c) */
        uint64_t last_vsize;
        /* A maps re-read asked of the maps reader and not answered yet: its
         * serial (0: none) and when (CLOCK_MONOTONIC).  Meanwhile the target
         * is sampled with the maps it has. */
        uint64_t maps_asked_serial;
        uint64_t maps_asked_ns;
        struct py_process *python; /* CPython frames, NULL for other processes */
        struct otlp_target *otlp;  /* Splunk export record in progress, or NULL */
        /* The span-context segment (context/). */
        struct context_reader context;
        /* Set up right after an exec, the dynamic loader may not have
         * mapped libpython yet, and an interpreter that is mapped has not
         * initialised its runtime until Py_Initialize has run (a runtime
         * that does not validate yet): discovery is tried again whenever
         * the maps change and every PYTHON_RETRY_EVERY_NS, until
         * python_retry_until_ns. */
        uint64_t python_retry_until_ns;
        uint64_t python_tried_generation;
        uint64_t python_tried_ns;
};

/* Sets up symbolization, unwinding, Python and (with an exporter) the
 * Splunk record for a freshly attached target.  0 or -ENOMEM; a part that
 * cannot be set up degrades (native-only, not exported) with a warning. */
int profiled_target__prepare(struct registry *registry, struct target *target);

/* The same in two steps, so that the tracer thread never waits on a
 * starting process's mmap lock (--watch, where new processes come while
 * other targets' events wait): asks the maps reader for the maps text, and
 * sets the target up when profiled_target__take_maps gets the reply.
 * Meanwhile target->owner stays NULL: the target is attached but not
 * sampled.  Set up here at once when the reader cannot take the request.
 * 0 or -ENOMEM. */
int profiled_target__ask_setup(struct registry *registry, struct target *target, uint64_t now_ns);
/* Whether a set-up was asked and is still awaited (not for longer than a
 * lost request or reply may take: then the caller asks again). */
bool profiled_target__setup_awaited(const struct target *target, uint64_t now_ns);

/* The perf event every thread of a native target gets (attach/perf_sampler.h):
 * the task clock every --interval of CPU time. */
struct perf_sampler_config profiled_target__perf_config(const struct profd_config *config);

/* --sampler=perf, before any target is touched: whether this process may
 * open such an event at all (on itself: the same privilege check as on a
 * target).  0 or -errno after a one-line error. */
int profiled_target__check_perf(const struct profd_config *config);

/* After target__follow_leader_exit moved target->mem_pid: the address
 * space and the Python reader read through the new thread. */
void profiled_target__follow_memory_pid(struct target *target);

/* A target set up just after its exec that was not Python then: looks
 * for CPython again once its address space changed (libpython mapped) or
 * a while after the last try (the runtime initialised).  Cheap when
 * there is nothing to retry. */
void profiled_target__retry_python(struct registry *registry, struct target *target,
                                   uint64_t now_ns);

/* After a tick at `tick_ns` (CLOCK_REALTIME): hands the target's Splunk
 * record to the exporter once it spans the flush interval
 * (otlp_target__after_tick), or now when `force`; `last`: the record is
 * freed too. */
void profiled_target__flush(struct registry *registry, struct target *target, uint64_t tick_ns,
                            bool force, bool last);

/* Flushes the record, then frees the target's engine state (exit, exec,
 * release). */
void profiled_target__release(struct registry *registry, struct target *target);

/* Frees the engine state without flushing (tear-down after the tracer
 * thread has gone).  Accepts a target that was never prepared. */
void profiled_target__free(struct target *target);

/* Whether a maps re-read was asked and is still awaited (not for longer
 * than a lost request or reply may take: then the caller asks again). */
bool profiled_target__maps_awaited(const struct profiled_target *profiled, uint64_t now_ns);
/* Has the target's maps re-read off the tracer thread (maps_reader.h),
 * or here when the reader cannot take the request. */
void profiled_target__ask_maps(struct registry *registry, struct target *target, uint64_t now_ns);
/* Applies every maps text the reader has returned to the target that
 * asked for it last, or sets up the target that waits for it (answering
 * ptrace events after each); a reply for a target gone or re-asked is
 * dropped. */
void profiled_target__take_maps(struct registry *registry);

/* For the context reader: the address space's generation, 0 (unknown)
 * without one. */
uint64_t profiled_target__maps_generation(const struct profiled_target *profiled);
