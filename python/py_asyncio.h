/* py_asyncio.h — the asyncio task a Python thread is running, for one
 * process. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/capture.h"
#include "python/py_asyncio_offsets.h"
#include "python/py_runtime.h"
#include "python/py_thread.h"
#include "util/backoff.h"
#include "util/string_pool.h"

#define PY_ASYNCIO_KEYS_COPY  512 /* bytes of _current_tasks' keys object copied */
#define PY_ASYNCIO_REGIONS    2   /* regions py_asyncio__regions adds, at most */
#define PY_ASYNCIO_LOOPS      8   /* event loops whose thread is remembered */
#define PY_ASYNCIO_NAMES      64  /* task names remembered */
#define PY_ASYNCIO_NAME_CHARS 128 /* longer names are truncated */
/* Copied in the stop window from the running task: its task_name and
 * task_context words (adjacent in every TaskObj layout), then the head of
 * its name object (a str of up to ~80 ASCII characters whole, or an int)
 * and of its Context (py_task_span.h). */
#define PY_ASYNCIO_TASK_WORDS 16
#define PY_ASYNCIO_NAME_COPY  128

struct py_asyncio_loop {
        uint64_t loop, ident; /* ident: loop._thread_id, 0 while not running */
        uint64_t read_ns;
};

struct py_asyncio_name {
        uint64_t task, object; /* the task and its task_name object */
        const char *name;      /* interned */
};

#define PY_ASYNCIO_NAME_TYPES 4 /* name objects' types whose flags are remembered */

struct py_asyncio_type {
        uint64_t type, flags;
};

struct py_asyncio {
        pid_t pid;
        const struct py_runtime *runtime;
        struct string_pool *strings; /* the process's, for names */
        struct py_asyncio_offsets offsets;
        bool have_offsets;
        uint64_t current_tasks; /* up to 3.13: the _asyncio._current_tasks dict, 0 unknown */
        uint64_t keys;          /* its keys object, as last seen: copied at each stop */
        struct backoff look_up; /* attempts to find what is still unknown */
        struct py_asyncio_loop loops[PY_ASYNCIO_LOOPS];
        size_t next_loop;
        struct py_asyncio_name names[PY_ASYNCIO_NAMES];
        struct py_asyncio_type name_types[PY_ASYNCIO_NAME_TYPES];
        size_t next_name_type;
};

/* Nothing is read yet: the first py_asyncio__task_name looks. */
void py_asyncio__init(struct py_asyncio *a, pid_t pid, const struct py_runtime *runtime,
                      struct string_pool *strings);

/* After the resume (and at discovery): finds the _asyncio module's task
 * table or offsets while they are unknown (after 1 s, 2 s, 4 s... up to
 * every 32 s: py_asyncio.c), so that the next stop copies what says which task
 * runs.  Cheap once found. */
void py_asyncio__prepare(struct py_asyncio *a, uint64_t now_ns);

/* Inside the stop window: the regions (at most PY_ASYNCIO_REGIONS, added
 * to the thread state's read) that say which task `t` runs: 3.14+ the
 * thread state's running-task word; up to 3.13 the _current_tasks dict's
 * keys pointer and its keys object.  Returns how many were written. */
size_t py_asyncio__regions(const struct py_asyncio *a, const struct py_thread *t,
                           uint64_t *addresses, size_t *lens);

/* Inside the stop window, after those regions were copied: when the
 * copied keys pointer of _current_tasks names another keys object than
 * the one copied (the dict was resized: every few task switches, as each
 * step deletes and inserts its entry), copies that one too (one more
 * process_vm_readv) and remembers it for the next stop.  No allocation. */
void py_asyncio__capture_keys(struct py_asyncio *a, struct capture *capture);

/* Inside the stop window, after the thread state's read (and
 * py_asyncio__capture_keys): the running task's name and context words,
 * then its name object's and its Context's heads, in two more
 * process_vm_readv, so that a task that ends (or leaves its span) before
 * the daemon gets to it still has its name and its span: the task is
 * known from the copy alone (3.14+ always; up to 3.13 when its loop's
 * thread is remembered).  No allocation.  Returns the address of the
 * Context whose head was copied, or 0. */
uint64_t py_asyncio__capture_task(struct py_asyncio *a, const struct py_thread *t,
                                  struct capture *capture);

/* After the resume: the running task's task_context word as copied in
 * the stop window, or 0 when it was not copied. */
uint64_t py_asyncio__copied_context(const struct py_asyncio *a, const struct capture *capture,
                                    uint64_t task);

/* Interpreter-buffer bytes those regions take, at most. */
size_t py_asyncio__bytes(void);

/* After the resume: the name of the task `t` was running at the capture
 * (and in *task the task's address, 0 when none is known), or NULL (not in a task, not known yet,
 * or a layout we do not know).  May look up the module (as py_asyncio__prepare), an event loop's
 * thread and the task's name object (one read, plus the str when it changed).  The string lives as
 * long as `strings`. */
const char *py_asyncio__task_name(struct py_asyncio *a, const struct py_thread *t,
                                  const struct capture *capture, uint64_t now_ns, uint64_t *task);

/* After the resume: loop._thread_id (threading.get_ident() of the thread
 * running the event loop at `loop`; 0 while it does not run or when
 * unreadable), remembered per loop for PY_ASYNCIO_LOOP_TTL_NS. */
uint64_t py_asyncio__loop_thread(struct py_asyncio *a, uint64_t loop, uint64_t now_ns);

/* After the resume: the text of a TaskObj.task_name object (a str, or an
 * int N meaning "Task-N"), interned in `strings`, or NULL. */
const char *py_asyncio__name_text(struct py_asyncio *a, uint64_t object);
