/* py_asyncio_tasks.h — every asyncio task of one process, with its state
 * and await chain, for `dump`. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/py_asyncio.h"
#include "python/py_code.h"
#include "python/py_thread.h"

#define PY_TASKS_MAX           1024 /* tasks listed per process */
#define PY_TASK_FRAMES_MAX     32   /* coroutines of one await chain */
#define PY_TASK_AWAITED_BY_MAX 8    /* tasks awaiting one task */

struct py_task_frame {
        const char *function, *file; /* interned in the process's pool */
        int64_t line;                /* -1 unknown */
};

struct py_task {
        uint64_t address;
        const char *name;  /* interned, NULL when unreadable */
        const char *state; /* "pending", "done" or "cancelled" */
        uint64_t thread;   /* threading.get_ident() of its loop's thread, 0 unknown */
        uint64_t waiter;   /* TaskObj.task_fut_waiter: the future it waits on */
        bool running;      /* its loop runs it (a step of it) at the read */
        size_t n_frames;   /* its coroutine first, then what each awaits */
        bool truncated;    /* the chain went on past PY_TASK_FRAMES_MAX */
        struct py_task_frame frames[PY_TASK_FRAMES_MAX];
        size_t n_awaited_by;
        uint64_t awaited_by[PY_TASK_AWAITED_BY_MAX]; /* tasks waiting on this one */
};

/* After the resume: every task of the process (3.14+: the per-thread and
 * per-interpreter task lists; 3.9, 3.11 and 3.13: asyncio.tasks' WeakSet
 * of tasks, and 3.13's set of eager tasks), at most PY_TASKS_MAX, in *out
 * (malloc'ed, the caller frees it).  `threads` gives the thread states
 * (3.14+), `codes` decodes the chain's code objects.  Returns how many, 0
 * when asyncio is not imported or its layout is unknown (other versions,
 * free-threaded builds), or -ENOMEM.  Every read is bounded and checked;
 * a task whose memory changes under the reads (its loop runs) may get a
 * shorter chain. */
int py_asyncio_tasks__list(struct py_asyncio *a, struct py_code_cache *codes,
                           const struct py_threads *threads, uint64_t now_ns, struct py_task **out);
