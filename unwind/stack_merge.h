/* stack_merge.h — one stack out of a native stack and the Python frames
 * the interpreter was running on the same thread.
 *
 * The native unwinder sees the interpreter loop (_PyEval_EvalFrameDefault)
 * once per C-level entry into Python; python/ sees the Python frames and
 * where each such entry began.  Merging replaces each interpreter-loop
 * native frame with the Python frames it was running; that frame is found
 * by stack address where the entry leaves an object on the C stack (3.11+),
 * else by its name. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MERGE_FAILED_FUNCTION "[merge failed]"

enum native_mode {
        NATIVE_MODE_DEFAULT,     /* keep non-interpreter native frames */
        NATIVE_MODE_ALL,         /* keep every native frame */
        NATIVE_MODE_PYTHON_ONLY, /* drop every native frame */
};

/* What a native frame is, for merging. */
enum native_class {
        NATIVE_OTHER,    /* outside the interpreter: kept by default */
        NATIVE_EVAL,     /* an interpreter-loop activation */
        NATIVE_INTERNAL, /* other interpreter code: dropped by default */
};

/* One Python-side item, leaf first: a frame, or the end of the frames one
 * interpreter-loop activation was running (`boundary`). */
struct py_item {
        bool boundary;
        /* boundaries only: an address on the C stack inside that
         * activation's native frame (3.12+ its entry frame, 3.11 its
         * cframe); 0 when unknown */
        uint64_t anchor;
        const char *function; /* frames only: co_qualname or co_name */
        const char *filename;
        int64_t line; /* -1 when unknown */
};

/* One frame of the result: native (function == NULL, pc = lookup address)
 * or Python (pc = 0). */
struct merged_frame {
        uint64_t pc;
        const char *function;
        const char *filename;
        int64_t line;
};

struct merged_stack {
        size_t n, capacity;
        bool truncated; /* some frames are missing (label thread.stack.truncated) */
        bool failed;    /* the counts did not line up */
        bool has_thread_ident;
        uint64_t thread_ident;    /* Python's threading.get_ident() of the thread */
        const char *gil;          /* "true"/"false": held at the capture; NULL unknown */
        const char *asyncio_task; /* the running asyncio task's name; NULL none */
        /* The span of that task's own context (python/py_task_span.h):
         * 0 unknown (the thread's slot holds), 1 none, 2 the ids below. */
        uint8_t task_span;
        char task_trace_id[33], task_span_id[17];
        struct merged_frame frames[];
};

struct merge_input {
        const uint64_t *pcs; /* native lookup addresses, leaf first */
        const uint64_t *sps; /* their stack pointers (0: unknown), or NULL */
        const enum native_class *classes;
        size_t n_pcs;
        bool native_truncated; /* the native walk did not reach the outermost frame */
        const struct py_item *items;
        size_t n_items;
        bool python_truncated; /* the Python walk stopped early (depth cap, bad memory) */
        bool python_torn;      /* ...on memory that did not check out (3.9/3.10: read live) */
        enum native_mode mode;
};

/* Allocates a stack with room for n_pcs + n_items + 1 frames.  NULL on
 * ENOMEM. */
struct merged_stack *merged_stack__new(size_t capacity);

/* Merges into `out` (capacity >= n_pcs + n_items + 1).  When the two sides
 * do not line up the result is still usable: the native frames up to the
 * first interpreter-loop frame, every Python frame, then a
 * MERGE_FAILED_FUNCTION frame; out->failed is set. */
void stack_merge__merge(const struct merge_input *in, struct merged_stack *out);

/* Classifies a native function by name: the interpreter loop
 * (_PyEval_EvalFrameDefault, also its ".cold" or other split part). */
bool stack_merge__is_eval_function(const char *name);
