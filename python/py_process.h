/* py_process.h — Python stacks for one profiled process: the sampler's
 * only entry point into python/. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/capture.h"
#include "attach/target.h"
#include "unwind/stack_merge.h"

struct py_process;
struct py_walk_scratch;
struct py_binaries;
struct address_space;

/* The Python labels of one sample (py_process__label); NULL = none. */
struct py_labels {
        const char *gil;          /* thread.gil: "true" or "false" */
        const char *thread_name;  /* threading.Thread.name */
        const char *asyncio_task; /* asyncio.task.name: the running task's name */
        /* The span of the running task's own context: when `task_span`,
         * it replaces the thread's span slot (trace_id/span_id NULL: the
         * task is in no span). */
        bool task_span;
        const char *trace_id, *span_id;
};

/* Discovers CPython in `pid`.  NULL when the process is not Python (info
 * line) or runs a version or build we cannot read (one warning line); the
 * target then gets native-only stacks.  `space` (the process's, may be
 * NULL) names its files, and `binaries` (may be NULL) holds the binaries
 * already read for other processes: one of the same file is not read
 * again.  Both must outlive the py_process.  `scratch` (py_frame.h) is
 * borrowed and may be shared by every process: walks never overlap. */
struct py_process *py_process__new(pid_t pid, struct address_space *space,
                                   struct py_binaries *binaries, struct py_walk_scratch *scratch);
void py_process__free(struct py_process *py);

/* Reads the target's memory through thread `pid` from now on (a live
 * thread's tid once the leader has exited). */
void py_process__set_pid(struct py_process *py, pid_t pid);

/* Inside the stop window (no allocation, no file I/O): copies the thread
 * state of capture->tid, the GIL holder word(s) and, on 3.11+, its current
 * data-stack chunk in one process_vm_readv, or on 3.9/3.10 the thread
 * state and GIL then the top frame object (two).  For a stopped thread it
 * may be called before its registers are read (`registers_read` false):
 * it then returns false, having copied nothing, when the thread was never
 * matched by tid (a first match on 3.9/3.10 needs fs_base), and is called
 * again once they are.  Otherwise true. */
bool py_process__capture(struct py_process *py, struct capture *capture, bool registers_read);

/* Inside the stop window, after py_process__capture and after the
 * registers and native stack were copied (a stopped or a blocked thread):
 * copies the frames of the thread's chain that neither copy holds: those
 * of its last stops prefetched in one process_vm_readv, then at most
 * PY_CORO_COPY_MAX more one by one (3.9/3.10: up to 48;
 * python/py_frame_copy.h).  Without them a coroutine or generator frame
 * read after the resume has mostly yielded and lost its link to its
 * caller, and a 3.9/3.10 frame object has been reused. */
void py_process__capture_frames(struct py_process *py, struct capture *capture);

/* Right after the resume, once a tick's stops are all taken and before
 * any unwinding: reads which asyncio task the capture's thread ran, and
 * that task's span, while the task is most likely still in that span (the
 * name comes from the stop window's copy; the span's HAMT is only pointed
 * to by it: python/py_task_span.c).  py_process__merge of the same
 * capture uses what this read.  Optional: without it the merge reads. */
void py_process__read_task(struct py_process *py, const struct capture *capture);

/* After the resume (cheap; call it before each merge): refreshes the
 * tstate <-> tid map when a sampled thread was unmapped (at most every
 * PY_THREADS_RETRY_NS) or every PY_THREADS_REFRESH_NS, and sizes `thread`'s
 * capture buffer (may be NULL) if it runs Python.  `target` may be NULL
 * only when no refresh is due. */
void py_process__prepare(struct py_process *py, struct target *target, struct tthread *thread);

/* Before the capture of a thread no py_process__prepare has sized (one
 * started since the last tick), outside the stop window: reserves its
 * capture buffer (capture__ready allocates it) for a thread state the
 * stop window may find for it, unless that thread is not looked for any
 * more (py_threads__seek).  Cheap when it has nothing to do. */
void py_process__reserve(struct py_process *py, struct tthread *thread);

/* After the resume: walks the captured Python frames and merges them with
 * `native`.  The result is kept in capture->interp.result (a struct
 * merged_stack, n == 0 when the thread runs no Python code) and returned;
 * NULL when out of memory.  *failed is set when the merge did not line up. */
const struct merged_stack *py_process__merge(struct py_process *py, struct address_space *space,
                                             struct capture *capture,
                                             const struct thread_stack *native,
                                             enum native_mode mode, bool *failed);

/* After the merge: whether this sample may stand for the thread's next
 * ones while the thread does not run (the sampler reuses an idle thread's
 * last stack).  Not when it was taken before the thread's Python state was
 * known and that may have changed: the thread map, refreshed since, knows
 * the thread now (its frames can be read: a few tries at most, so that a
 * state that cannot be copied does not cost a copy every tick), or has
 * not been refreshed since (the thread may be one whose state the next
 * refresh finds).  A thread still unknown to a refresh made after its
 * sample runs no Python code: its sample stands. */
bool py_process__sample_reusable(struct py_process *py, const struct capture *capture);

/* After the merge, before recording: the Python labels of this thread's
 * sample.  Sets labels->gil ("true"/"false") for a Python thread whose GIL
 * bytes were copied, and labels->thread_name to threading.Thread.name when
 * known (the name table is re-read here when a thread is missing from it
 * or has no name yet, a few times within a third of a second, and every
 * 10 s), and labels->asyncio_task to the name of the asyncio task it ran
 * at the capture (python/py_asyncio.h).  Leaves them alone otherwise.  The
 * strings live as long as the py_process. */
void py_process__label(struct py_process *py, const struct capture *capture,
                       struct py_labels *labels);

/* After the resume: every asyncio task of the process, with its state
 * and await chain (python/py_asyncio_tasks.h), in *out (malloc'ed, the
 * caller frees it; the strings live as long as the py_process).  The
 * count, 0 when none or not known for this version, or -ENOMEM. */
struct py_task;
int py_process__tasks(struct py_process *py, struct py_task **out);

/* The binary this process runs (shared with other processes of the same
 * file; tests compare them). */
const struct py_binary *py_process__binary(const struct py_process *py);
