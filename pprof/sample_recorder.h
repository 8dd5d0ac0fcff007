/* sample_recorder.h — turns one unwound thread stack into one pprof Sample:
 * symbolizes each address (through the build-id keyed caches), interns
 * mappings, functions and locations in the profile builder, and attaches
 * the per-sample labels Splunk's profilers use. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "attach/target.h"
#include "context/thread_context.h"

#include "pprof/location_cache.h"

struct address_space;
struct profile_builder;
struct merged_stack;

struct sample_record {
        pid_t pid;
        pid_t tid;
        const char *thread_name;
        const char *thread_state; /* "running", "runnable" or "blocked" */
        uint64_t time_ns;         /* CLOCK_REALTIME */
        const struct thread_stack *stack;
        int64_t thread_id;    /* thread.id label (runtime thread id); 0 = none */
        const char *trace_id; /* 32 lowercase hex digits, or NULL */
        const char *span_id;  /* 16 lowercase hex digits, or NULL */
        /* OTEP 4947 record attributes (string labels named by the key
         * map), or NULL; a name already used by a label above is skipped. */
        const struct thread_record *span_attributes;
        const char *gil; /* thread.gil: "true"/"false" (Python threads), or NULL */
        /* Python threads: threading.Thread.name, which the thread.name
         * label then carries instead of thread_name (the OS name, which
         * dump and top keep showing); NULL when unknown. */
        const char *python_thread_name;
        /* Python threads: asyncio.task.name, the asyncio task running at
         * the sample; NULL when none. */
        const char *asyncio_task;
        /* Python targets: the merged native + Python stack; when non-NULL
         * with n > 0 it is recorded instead of `stack`. */
        const struct merged_stack *merged;
        /* Values (pprof/sample_recorder.c): the thread's CPU time charged
         * to this sample and the wall time it stands for, in ns. */
        int64_t cpu_ns;
        int64_t wall_ns;
};

struct sample_recorder {
        struct profile_builder *builder;
        int64_t period_ms;
        /* One-entry cache: consecutive frames are mostly in one mapping.
         * Keyed by serial: a mapping's memory is reused once its
         * processes are gone (0 = none; serials start at 1). */
        uint64_t last_mapping_serial;
        uint64_t last_mapping_id;
};

/* Records one sample.  `cache` is the target's address -> Location cache
 * (may be NULL).  Returns 0 or -ENOMEM. */
int sample_recorder__record(struct sample_recorder *recorder, struct address_space *space,
                            struct location_cache *cache, const struct sample_record *record);

/* Registers the mapping holding `address` (the target's main executable)
 * so that it comes first in the profile, as pprof expects. */
void sample_recorder__add_main_mapping(struct sample_recorder *recorder,
                                       struct address_space *space, uint64_t address);
