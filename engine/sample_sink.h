/* sample_sink.h — where the sampler hands each thread-sample after it has
 * been unwound, so that `record`, `dump` and `top` share one sampling path.
 *
 * The sampler (engine/sampler.c) always does the same tick: stop only the
 * running threads, capture, resume, unwind, merge Python frames.  What
 * happens to the resulting stack is the caller's business:
 *
 *   record  the profile builder (pprof and the file formats built from it)
 *           and the Splunk exporter, as before; no sink.
 *   dump    a sink that symbolizes and prints every thread once.
 *   top     a sink that folds stacks into a live per-function table.
 *
 * The sink runs on the tracer thread, after every thread of the tick was
 * resumed, so it may symbolize and allocate; it must not block for long
 * (the next tick waits) and must copy whatever it keeps: the record's
 * strings and stacks are reused on the next tick. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct sample_record;
struct address_space;
struct target;
struct tthread;

struct sample_event {
        const struct sample_record *record; /* labels, native or merged stack */
        struct address_space *space;        /* symbolizes record's native pcs; may be NULL */
        const struct target *target;
        const struct tthread *thread;
        long syscall_nr; /* blocked threads: the syscall (-1: none known) */
};

struct sample_sink {
        /* NULL: no sink.  Called once per recorded thread-sample. */
        void (*on_sample)(void *arg, const struct sample_event *event);
        /* NULL: a run of config.max_ticks ticks ends after them.  Else
         * asked after each tick from then on: false asks for one more (the
         * sink bounds how many). */
        bool (*complete)(void *arg);
        void *arg;
};
