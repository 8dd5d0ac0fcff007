/* profile_stacks.h — the profile builder's samples as root-first stacks of
 * printable frames: the one source the collapsed, speedscope and SVG
 * writers read, so every output format shows exactly what the pprof holds.
 *
 * A Location with several Lines (inlining) becomes several frames, outer
 * function first.  A Python frame is a Location with mapping 0 and address
 * 0 (see profile_builder.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile_builder;

struct ps_frame {
        const char *function; /* never NULL */
        const char *file;     /* "" when unknown */
        int64_t line;         /* <= 0 when unknown */
        uint64_t function_id; /* the builder's Function id: equal ids, equal name and file */
        bool python;
};

struct ps_sample {
        const struct ps_frame *frames; /* root first */
        size_t n_frames;
        int64_t value; /* the default sample type's value (ns of CPU, or of wall with --wall) */
        int64_t pid, tid;
        const char *thread_name; /* "" when unknown */
};

/* Called once per sample whose value is not 0 (a blocked sample has no CPU
 * time); a negative return stops the walk and is
 * returned by profile_stacks__each. */
typedef int (*profile_stack_fn)(void *arg, const struct ps_sample *sample);

/* 0, -ENOMEM, or the callback's negative return. */
int profile_stacks__each(const struct profile_builder *builder, profile_stack_fn fn, void *arg);
