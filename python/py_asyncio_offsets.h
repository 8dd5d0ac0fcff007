/* py_asyncio_offsets.h — where the _asyncio module keeps its tasks, for
 * one process. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_offsets.h"

struct py_asyncio_offsets {
        uint64_t task_size;    /* TaskObj bytes */
        uint64_t task_name;    /* TaskObj.task_name: str, or (3.12+) int N for "Task-N" */
        uint64_t task_coro;    /* TaskObj.task_coro */
        uint64_t task_context; /* TaskObj.task_context: after the name (measured) */
        uint64_t thread_task;  /* 3.14+: the running task in the thread state, else 0 */
        uint64_t thread_loop;  /* 3.14+: the running loop in the thread state, else 0 */
        uint64_t thread_size;  /* 3.14+: _PyThreadStateImpl bytes, else 0 */
        /* 3.14+: the lists of all tasks (py_asyncio_tasks), else 0 */
        uint64_t task_node;         /* TaskObj.task_node: {next, prev} */
        uint64_t interp_tasks_head; /* tasks of threads that have exited */
        uint64_t thread_tasks_head; /* tasks created on the thread */
        bool from_debug;            /* read from the module's _Py_AsyncioModuleDebugOffsets */
};

/* The TaskObj layout the minor's entry gives, measured (3.9, 3.11 and
 * 3.13; the running task is then found through _asyncio._current_tasks).
 * False when it gives none (3.10 and 3.12: not measured, no task names;
 * 3.14+: see py_asyncio_offsets__from_debug). */
bool py_asyncio_offsets__measured(const struct py_asyncio_layout *layout,
                                  struct py_asyncio_offsets *out);

/* 3.14+: the _Py_AsyncioModuleDebugOffsets CPython puts in the
 * .AsyncioDebug section of the _asyncio module (a lib-dynload file, or the
 * interpreter itself when the module is built in), read from the target's
 * memory once the module is mapped.  0, -ENOENT while no mapped file has
 * the section, or -errno; implausible values are -EINVAL. */
int py_asyncio_offsets__from_debug(pid_t pid, struct py_asyncio_offsets *out);
