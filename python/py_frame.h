/* py_frame.h — a thread's Python frames, from its capture. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attach/capture.h"
#include "python/py_code.h"
#include "python/py_runtime.h"
#include "unwind/stack_merge.h"

#define PY_MAX_FRAMES 1024 /* Python frames per sample; deeper stacks are truncated */
#define PY_MAX_STEPS  (4 * PY_MAX_FRAMES) /* frames visited, sentinels included */
#define PY_ITEMS_MAX  (2 * PY_MAX_STEPS + 2)

struct py_walk {
        const struct py_runtime *runtime;
        struct py_code_cache *codes;
        const struct capture *capture;
        uint64_t now_ns;
        /* Output, leaf first.  `items` holds PY_ITEMS_MAX entries. */
        struct py_item *items;
        size_t n_items, n_frames;
        bool truncated;
        /* Scratch: open-addressing set of visited frames (PY_SEEN_SLOTS),
         * all zero between walks, and the slots a walk filled (as many),
         * which it empties again when it ends: a walk of n frames clears n
         * slots instead of the whole set. */
        uint64_t *seen;
        uint16_t *seen_used;
        size_t n_seen_used;
        size_t seen_mask;    /* slots in use - 1 (py_frame.c) */
        uint64_t live_reads; /* frame reads that missed the copy */
};

#define PY_SEEN_SLOTS (2 * PY_MAX_STEPS) /* at most 65536: seen_used is 16-bit */

/* A walk's scratch memory (its items and visited set, ~400 KB of address
 * space): one for every process, since one thread walks them all. */
struct py_walk_scratch {
        struct py_item *items; /* PY_ITEMS_MAX */
        uint64_t *seen;        /* PY_SEEN_SLOTS, zero between walks */
        uint16_t *seen_used;   /* PY_SEEN_SLOTS */
};

/* 0 or -ENOMEM. */
int py_walk_scratch__init(struct py_walk_scratch *scratch);
void py_walk_scratch__release(struct py_walk_scratch *scratch);

/* Walks the frames of the thread state at `tstate`, whose bytes the
 * capture holds.  Never fails: unreadable frames become "<unknown>" and
 * end the walk with `truncated` set. */
void py_frame__walk(struct py_walk *walk, uint64_t tstate);

/* The current-frame address from a copied thread state, 0 when none. */
uint64_t py_frame__top(const struct py_walk *walk, uint64_t tstate);
