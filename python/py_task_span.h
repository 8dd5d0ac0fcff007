/* py_task_span.h — the OpenTelemetry span current in an asyncio task's
 * own context, read out of the target. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/capture.h"
#include "python/py_runtime.h"
#include "util/backoff.h"

enum py_task_span_result {
        PY_TASK_SPAN_UNKNOWN, /* could not tell: the thread's own slot stays */
        PY_TASK_SPAN_NONE,    /* the task's context has no valid span */
        PY_TASK_SPAN_FOUND,
        /* The task's context no longer holds what the stop window copied
         * (the task left or entered a span, or ended, before the read):
         * what was read may be freed memory, so the sample gets no span. */
        PY_TASK_SPAN_STALE,
};

/* The head of a contextvars.Context copied in the stop window (ob_refcnt,
 * ob_type, ctx_prev, ctx_vars): which HAMT the task's variables were at
 * the stop. */
#define PY_TASK_SPAN_CONTEXT_COPY 32

/* What the stop window's walk (py_task_span__capture) follows, learnt
 * from the reads after the resume; `ready` once all of it is known. */
struct py_task_span_hint {
        bool ready;
        uint32_t hash_bits, hash_known; /* the ContextVar's HAMT hash, the bits seen so far */
        uint64_t key;                   /* the "current-span-<uuid>" str object */
        uint32_t key_at;                /* its slot in the OTel Context's keys object */
        int32_t values_at;              /* 3.11/3.12: the span's values pointer, 0 if inline */
        uint8_t values_tag;             /* 3.12: 1, the pointer is values - 1 */
        uint32_t context_at;            /* span._context, from the span or its values */
        uint64_t span_type, span_context_type;
};

/* Interpreter-buffer bytes the stop window's walk copies, at most. */
#define PY_TASK_SPAN_WINDOW_BYTES 2560
/* Regions it adds, at most. */
#define PY_TASK_SPAN_WINDOW_REGIONS 10

struct py_task_span {
        pid_t pid;
        const struct py_runtime *runtime;
        uint64_t var;                   /* opentelemetry.context's ContextVar, 0 while unknown */
        struct backoff look_up;         /* attempts to find `var` */
        uint64_t node_types[3];         /* HAMT bitmap, array, collision node types, as found */
        char trace_id[33], span_id[17]; /* the last span read */
        struct py_task_span_hint hint;
};

void py_task_span__init(struct py_task_span *s, pid_t pid, const struct py_runtime *runtime);

/* Inside the stop window, once the task's Context head was copied at
 * `context`: follows the chain from its variables down to the span's two
 * ints (~8 process_vm_readv, one path through the HAMT, the dict slot and
 * attribute places learnt from earlier samples, each checked), so that
 * py_task_span__read finds the span in the copy.  Gives up, copying what
 * it got, when a hint is missing or does not check out.  No allocation. */
void py_task_span__capture(struct py_task_span *s, struct capture *capture, uint64_t context);

/* After the resume: the span of the Context object at `context` (an
 * asyncio task's own, TaskObj.task_context), as hex strings in trace_id
 * and span_id (they live until the next call).  `copy`: its
 * PY_TASK_SPAN_CONTEXT_COPY first bytes as the stop window copied them,
 * or NULL to read the variables as they are now.  With a copy, FOUND or
 * NONE from the stop window's walk when it got to the end in `capture`
 * (may be NULL); else the variables at the stop are searched now (about
 * 24 small reads), and STALE when the context no longer holds them once
 * read.  UNKNOWN until opentelemetry.context is imported (looked for
 * after 1 s, 2 s... up to every 32 s) or when the memory does not check
 * out. */
enum py_task_span_result py_task_span__read(struct py_task_span *s, const struct capture *capture,
                                            uint64_t context, const uint8_t *copy, uint64_t now_ns,
                                            const char **trace_id, const char **span_id);
