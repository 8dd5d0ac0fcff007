/* py_process.c — one Python target: discovery, the stop-window copy, the
 * walk and the merge, tied together for the sampler.
 *
 * Why: the sampler should not know about thread states, code caches or
 * versions; it calls four functions at four points of a tick.
 *
 * How:
 *   new      py_runtime finds _PyRuntime in this process, with the
 *            interpreter binary's version and layout (py_binary, read once
 *            per file and shared by every process running it).  Not
 *            Python, or an unsupported version: NULL, and the target
 *            stays native.
 *   prepare  (after the resume) refreshes the thread map when a sampled
 *            thread was unmapped (at most every PY_THREADS_RETRY_NS) or
 *            every PY_THREADS_REFRESH_NS, and grows the capture buffers of
 *            Python threads, so the stop window never allocates.  A thread
 *            seen for the first time therefore gets native-only samples
 *            until the next refresh, unless the stop window finds its
 *            state itself (py_threads__seek), and such a sample is not
 *            reused for an idle thread (py_process__sample_reusable).
 *   reserve  (before a new thread's first capture) sizes its capture
 *            buffer for a state the stop window may find.
 *   capture  (inside the stop window) finds the thread's state without
 *            allocating (a thread unknown to the map: a bounded walk of
 *            the thread lists' newest states) and copies it, with the GIL holder (py_gil) and the
 *            data-stack chunk cached for it, in one process_vm_readv; on
 *            3.9/3.10 a second read copies the top frame object.  Of the
 *            chunk, only the part in use at the thread's last capture is
 *            copied (plus CHUNK_SLACK); if the copied tstate's
 *            datastack_top says the stack has grown past that, the chunk
 *            is copied again up to the top, still in the stop window.
 *   capture_frames (still in the stop window, after the registers and
 *            stack) copies the frames of the chain none of these copies
 *            holds: generator and coroutine frames, on 3.9/3.10 the
 *            frame objects, bounded (py_frame_copy.c).
 *   merge    (after the resume) walks the copy (py_frame), classifies the
 *            native frames (interpreter loop, other interpreter code, the
 *            rest) and merges (unwind/stack_merge).  A thread whose copied
 *            tstate names another chunk than the one copied gets the new
 *            chunk cached for its next sample; this sample's frames are
 *            then read live.
 *   label    (before recording) thread.gil from the copied GIL bytes, and
 *            thread.name from threading (py_thread_names), refreshed after
 *            the resume only when a thread is missing or not yet named (a
 *            few times) or every 10 s.
 *
 * Native frame classes: NATIVE_EVAL is a function named
 * _PyEval_EvalFrameDefault (or a split part such as its .cold), wherever it
 * is; NATIVE_INTERNAL is any other frame whose code lies in the file that
 * holds _PyRuntime (libpython3.X.so, or the python executable of a static
 * build): call machinery, main, Py_RunMain, builtins implemented in the
 * core such as time.sleep.  Everything else (C extensions, lib-dynload
 * modules, libffi, libc) is NATIVE_OTHER.  Classes are cached per address
 * and dropped when the address space changes; the class found for one
 * address is also kept for the whole ELF symbol around it (remember_range),
 * so a busy thread's ever-changing leaf addresses need no symbol lookup
 * each.  The interpreter loop's own ranges come with the binary, so its
 * frames need no lookup at all.
 *
 * Names are the fallback.  On 3.11+ the merge finds the interpreter-loop
 * frames by stack address instead (each boundary's anchor against each
 * native frame's stack span; see unwind/stack_merge.c), so a stripped
 * interpreter whose loop runs in an unnamed .cold part merges the same;
 * on 3.9/3.10, or when the anchors do not check out, it goes by class. */
#include "python/py_process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_asyncio.h"
#include "python/py_asyncio_tasks.h"
#include "python/py_code.h"
#include "python/py_frame.h"
#include "python/py_frame_copy.h"
#include "python/py_gil.h"
#include "python/py_runtime.h"
#include "python/py_task_span.h"
#include "python/py_thread.h"
#include "python/py_thread_names.h"
#include "symbolize/symbolizer.h"
#include "util/array.h"
#include "util/backoff.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/log.h"

/* A safety net only: a new thread, a thread state not found and a chunk
 * switch each ask for a refresh themselves (unmapped_seen).  Reading every
 * thread list twice a second was 9% of the daemon's CPU with 50 idle
 * Python processes at 1 Hz. */
#define PY_THREADS_REFRESH_NS (5000ull * 1000 * 1000)
#define PY_THREADS_RETRY_NS   (20ull * 1000 * 1000)
/* A new thread's name is looked for again after 20, 40, 80, 160 and 320
 * ms: threading registers it a moment after its thread state exists. */
#define PY_NAMES_RETRY_NS   (20ull * 1000 * 1000)
#define PY_NAMES_TRIES      5
#define PY_NAMES_REFRESH_NS (10000ull * 1000 * 1000)
#define CLASS_CACHE_SLOTS   1024
#define PY_STRING_SEED      0x5bd1e9955bd1e995ull
#define CLASS_RANGES        64
/* Bytes of the data-stack chunk copied beyond its used part at the last
 * capture: a stack that grew less than this since needs no second copy. */
#define CHUNK_SLACK 1024
/* Samples in a row that a known thread may have without its copied state
 * before one of them is reused anyway (py_process__sample_reusable). */
#define PY_STATELESS_TRIES 3

/* The address range of one function symbol whose class is known. */
struct class_range {
        uint64_t start, end;
        uint64_t generation;
        enum native_class cls;
};

struct class_slot {
        uint64_t pc;
        uint64_t generation;
        enum native_class cls;
};

/* A thread's task labels read right after its stop (py_process__read_task),
 * for the merge of the same capture (tid and time_ns). */
struct task_read {
        pid_t tid;
        uint64_t time_ns;
        const char *name;
        uint8_t span;
        char trace_id[33], span_id[17];
};

#define TASK_READS 64 /* threads whose early read is kept (by tid) */

struct py_process {
        pid_t pid;
        struct py_runtime runtime;
        struct string_pool strings;
        struct py_code_cache codes;
        struct py_threads threads;
        struct py_thread_names names;
        struct py_asyncio asyncio;
        struct py_task_span task_span;
        struct py_frame_copy frame_copy;
        struct task_read task_reads[TASK_READS];
        uint64_t last_refresh_ns;
        bool unmapped_seen;              /* a sampled thread had no thread state */
        uint64_t unmapped_sample_ns;     /* when the last such sample was captured */
        struct py_walk_scratch *scratch; /* shared by every process */
        enum native_class *classes;
        size_t classes_capacity;
        struct class_slot class_cache[CLASS_CACHE_SLOTS];
        struct class_range class_ranges[CLASS_RANGES];
        size_t next_range;
};

struct py_process *py_process__new(pid_t pid, struct address_space *space,
                                   struct py_binaries *binaries, struct py_walk_scratch *scratch)
{
        struct py_process *py = calloc(1, sizeof(*py));
        char why[256];

        if (!py)
                return NULL;
        switch (py_runtime__discover(pid, space, binaries, &py->runtime, why, sizeof(why))) {
        case PY_DISCOVERY_FOUND:
                break;
        case PY_DISCOVERY_NOT_PYTHON:
                log_info("PID %d: not Python (%s); native stacks only", (int)pid, why);
                free(py);
                return NULL;
        case PY_DISCOVERY_UNSUPPORTED:
                log_warning("PID %d: %s; Python frames unavailable, native stacks only", (int)pid,
                            why);
                free(py);
                return NULL;
        case PY_DISCOVERY_REFUSED: /* warned when first refused */
                log_debug("PID %d: %s; native stacks only", (int)pid, why);
                free(py);
                return NULL;
        }
        py->pid = pid;
        py->scratch = scratch;
        string_pool__init(&py->strings, PY_STRING_SEED ^ (uint64_t)pid);
        py_code_cache__init(&py->codes, pid, py->runtime.offsets, py->runtime.code_type,
                            &py->strings);
        py->unmapped_seen = true;
        py_asyncio__init(&py->asyncio, pid, &py->runtime, &py->strings);
        py_asyncio__prepare(&py->asyncio, monotonic_ns());
        py_task_span__init(&py->task_span, pid, &py->runtime);
        return py;
}

int py_process__tasks(struct py_process *py, struct py_task **out)
{
        return py_asyncio_tasks__list(&py->asyncio, &py->codes, &py->threads, monotonic_ns(), out);
}

const struct py_binary *py_process__binary(const struct py_process *py)
{
        return py->runtime.binary;
}

void py_process__set_pid(struct py_process *py, pid_t pid)
{
        py->pid = py->codes.pid = pid;
}

void py_process__free(struct py_process *py)
{
        if (!py)
                return;
        py_code_cache__clear(&py->codes);
        string_pool__clear(&py->strings);
        py_threads__clear(&py->threads);
        py_thread_names__clear(&py->names);
        py_runtime__clear(&py->runtime);
        free(py->classes);
        free(py);
}

/* The interpreter buffer a thread's capture needs: its chunk's size when
 * known (16 KiB for most threads), else the most a chunk copy takes; for
 * a thread the map does not know (t NULL) PY_NEW_CHUNK_BYTES, the size of
 * the first chunk CPython gives a thread. */
static size_t capture_bytes(const struct py_offsets *o, const struct py_thread *t)
{
        size_t chunk = 0;

        if (o->tstate_datastack_chunk)
                chunk = !t                                             ? PY_NEW_CHUNK_BYTES
                        : t->chunk && t->chunk_len < PY_CHUNK_COPY_MAX ? t->chunk_len
                                                                       : PY_CHUNK_COPY_MAX;
        return o->tstate_size + PY_GIL_REGION_MAX + py_asyncio__bytes() +
               PY_TASK_SPAN_WINDOW_BYTES + chunk + o->frame_size + py_frame_copy__bytes(o);
}

static void refresh_threads(struct py_process *py, struct target *target, uint64_t now_ns)
{
        _cleanup_free_ pid_t *tids = calloc(2 * PY_MAX_THREADS, sizeof(*tids));
        pid_t *ns_tids = tids + PY_MAX_THREADS;
        size_t n = 0;

        if (!tids)
                return;
        for (size_t i = 0; i < target->n_threads && n < PY_MAX_THREADS; i++) {
                ns_tids[n] = target__ns_tid(target, target->threads[i]);
                tids[n++] = target->threads[i]->tid;
        }
        (void)py_threads__refresh(&py->threads, py->pid, &py->runtime, tids, ns_tids, n);
        py->last_refresh_ns = now_ns;
        py->unmapped_seen = false;
}

void py_process__prepare(struct py_process *py, struct target *target, struct tthread *thread)
{
        uint64_t now_ns = monotonic_ns();
        uint64_t elapsed = now_ns - py->last_refresh_ns;

        if (target && ((py->unmapped_seen && elapsed >= PY_THREADS_RETRY_NS) ||
                       elapsed >= PY_THREADS_REFRESH_NS))
                refresh_threads(py, target, now_ns);
        py_asyncio__prepare(&py->asyncio, now_ns);
        if (!thread)
                return;
        /* 3.9/3.10 threads may still be matched by fs_base at their stop,
         * and an unknown thread the stop window still looks for
         * (py_threads__seek) may be found there. */
        const struct py_thread *t = py_threads__find(&py->threads, thread->tid, 0);
        py_frame_copy__plan(&py->frame_copy, thread->tid, py->runtime.offsets);
        if (t || !py->runtime.offsets->tstate_native_thread_id ||
            py_threads__seeking(&py->threads, thread->tid))
                capture__reserve_interp(&thread->capture, capture_bytes(py->runtime.offsets, t));
}

void py_process__reserve(struct py_process *py, struct tthread *thread)
{
        if (thread->capture.interp.reserved || !py_threads__seeking(&py->threads, thread->tid))
                return;
        capture__reserve_interp(&thread->capture, capture_bytes(py->runtime.offsets, NULL));
}

/* 3.11+: the chunk's used part, [chunk, tstate->datastack_top), from the
 * copied tstate, or 0 when the tstate names another chunk or a top outside
 * it.  datastack_top follows datastack_chunk in every version from 3.11
 * to 3.15 (it is not among the debug offsets; 3.15: cpython/pystate.h). */
static size_t chunk_used(const struct py_offsets *o, const struct py_thread *t,
                         const uint8_t *tstate)
{
        uint64_t chunk, top;

        if (!tstate || o->tstate_datastack_chunk + 16 > o->tstate_size)
                return 0;
        memcpy(&chunk, tstate + o->tstate_datastack_chunk, sizeof(chunk));
        memcpy(&top, tstate + o->tstate_datastack_chunk + 8, sizeof(top));
        if (chunk != t->chunk || (top & 7) || top <= chunk || top - chunk > t->chunk_len)
                return 0;
        return (size_t)(top - chunk);
}

bool py_process__capture(struct py_process *py, struct capture *capture, bool registers_read)
{
        const struct py_offsets *o = py->runtime.offsets;
        bool stopped = capture->kind == CAPTURE_STOPPED;
        uint64_t fs_base = stopped && registers_read ? capture->regs.fs_base : 0;
        struct py_thread *t = py_threads__find(&py->threads, capture->tid, fs_base);
        uint64_t addresses[3 + PY_ASYNCIO_REGIONS];
        size_t lens[3 + PY_ASYNCIO_REGIONS], n = 0, chunk_copied = 0;

        capture->interp.n_regions = capture->interp.used = 0;
        if (!t && stopped && !registers_read)
                return false; /* fs_base may match it: try again with it */
        /* A thread started since the last refresh: look for it now. */
        if (!t) {
                t = py_threads__seek(&py->threads, py->pid, &py->runtime, capture->tid, fs_base);
                /* Its chunk's real size, and a check of the whole list. */
                py->unmapped_seen = true;
        }
        if (!t) {
                py->unmapped_seen = true;
                py->unmapped_sample_ns = monotonic_ns(); /* vDSO: no system call */
                return true;
        }
        addresses[n] = t->tstate;
        lens[n++] = o->tstate_size;
        if (t->gil) { /* before the chunk: a freed chunk must not cost it */
                addresses[n] = t->gil;
                lens[n++] = py_gil__region_len(o);
        }
        /* Which asyncio task runs (py_asyncio), in the same read. */
        n += py_asyncio__regions(&py->asyncio, t, addresses + n, lens + n);
        if (t->chunk) {
                /* Only the part in use at the last capture, and some: a
                 * 100-frame stack uses ~11 KiB of a 16 KiB chunk, a
                 * shallow one a few hundred bytes. */
                chunk_copied = t->chunk_len;
                if (t->chunk_used && t->chunk_used + CHUNK_SLACK < t->chunk_len)
                        chunk_copied = t->chunk_used + CHUNK_SLACK;
                addresses[n] = t->chunk;
                lens[n++] = chunk_copied;
        }
        if (capture__copy_interp(capture, addresses, lens, n) < (ssize_t)o->tstate_size)
                return true;
        const uint8_t *tstate = capture__interp_at(capture, t->tstate, o->tstate_size);
        if (t->chunk) {
                size_t used = chunk_used(o, t, tstate);
                struct capture_interp *interp = &capture->interp;
                t->chunk_used = used;
                if (used > chunk_copied && interp->n_regions == n &&
                    interp->regions[n - 1].address == t->chunk) {
                        /* The stack grew past the copy: copy the chunk
                         * again, up to its top, in place of the first. */
                        size_t len =
                            t->chunk_len - used > CHUNK_SLACK ? used + CHUNK_SLACK : t->chunk_len;
                        interp->used = interp->regions[n - 1].offset;
                        interp->n_regions = n - 1;
                        (void)capture__copy_interp(capture, &t->chunk, &len, 1);
                }
        }
        py_asyncio__capture_keys(&py->asyncio, capture);
        /* and the span of the task's context, down to its ids */
        py_task_span__capture(&py->task_span, capture,
                              py_asyncio__capture_task(&py->asyncio, t, capture));
        if (o->model != PY_FRAMES_OBJECTS)
                return true;
        /* 3.9/3.10: the top frame object, whose f_lasti moves fastest. */
        uint64_t frame;
        memcpy(&frame, tstate + o->tstate_frame, sizeof(frame));
        if (frame >= 4096) {
                size_t len = o->frame_size;
                (void)capture__copy_interp(capture, &frame, &len, 1);
        }
        return true;
}

void py_process__capture_frames(struct py_process *py, struct capture *capture)
{
        struct py_thread *t = py_threads__find(&py->threads, capture->tid, 0);
        struct py_walk walk = {.runtime = &py->runtime, .capture = capture};

        if (!t || capture->interp.n_regions == 0)
                return;
        (void)py_frame_copy__chain(&py->frame_copy, &py->runtime, capture,
                                   py_frame__top(&walk, t->tstate));
}

/* A class holds for a whole function: the ELF symbol holding `pc` (from
 * the symbol table shared by build-id), when it has a size and lies in
 * pc's mapping, is remembered, so that the leaf addresses of a busy
 * thread, which keep changing inside a few functions, cost one range check
 * each.  The symbol's name and file decide the class, which needs no DWARF:
 * the interpreter's debuginfo (10 MB of heap for python3.11's) is never
 * loaded just to classify.  Only an address outside any sized symbol (a
 * stripped .cold part) asks the symbolizer, whose DWARF knows the function
 * such a part belongs to. */
static void remember_range(struct py_process *py, uint64_t start, uint64_t end,
                           enum native_class cls, uint64_t generation)
{
        py->class_ranges[py->next_range] =
            (struct class_range){.start = start, .end = end, .generation = generation, .cls = cls};
        py->next_range = (py->next_range + 1) % CLASS_RANGES;
}

static bool class_of_range(const struct py_process *py, uint64_t pc, uint64_t generation,
                           enum native_class *cls)
{
        for (size_t i = 0; i < CLASS_RANGES; i++) {
                const struct class_range *r = &py->class_ranges[i];
                if (r->generation == generation && pc >= r->start && pc < r->end) {
                        *cls = r->cls;
                        return true;
                }
        }
        return false;
}

/* Whether pc lies in the file that holds _PyRuntime. */
static bool in_interpreter(const struct py_process *py, uint64_t pc)
{
        return pc >= py->runtime.start && pc < py->runtime.limit;
}

static enum native_class class_by_name(const struct py_process *py, const char *function,
                                       uint64_t pc)
{
        if (stack_merge__is_eval_function(function))
                return NATIVE_EVAL;
        return in_interpreter(py, pc) ? NATIVE_INTERNAL : NATIVE_OTHER;
}

/* The interpreter loop's own symbols were read with its binary, once for
 * every process: no lookup at all. */
static bool eval_range(const struct py_process *py, uint64_t pc, uint64_t *start, uint64_t *end)
{
        const struct py_binary *b = py->runtime.binary;
        uint64_t rel = pc - py->runtime.bias;

        if (!in_interpreter(py, pc))
                return false;
        for (size_t i = 0; i < b->n_eval; i++) {
                if (rel >= b->eval[i].start && rel < b->eval[i].end) {
                        *start = b->eval[i].start + py->runtime.bias;
                        *end = b->eval[i].end + py->runtime.bias;
                        return true;
                }
        }
        return false;
}

static enum native_class classify_uncached(struct py_process *py, struct address_space *space,
                                           uint64_t pc, uint64_t generation)
{
        struct symbolized_pc sym;
        uint64_t start, end;
        const char *name;
        enum native_class cls;

        if (eval_range(py, pc, &start, &end)) {
                remember_range(py, start, end, NATIVE_EVAL, generation);
                return NATIVE_EVAL;
        }
        if (address_space__function_range(space, pc, &start, &end, &name)) {
                cls = class_by_name(py, name, pc);
                remember_range(py, start, end, cls, generation);
                return cls;
        }
        address_space__symbolize(space, pc, &sym);
        return class_by_name(py, sym.lines[sym.n_lines - 1].function, pc);
}

static enum native_class classify(struct py_process *py, struct address_space *space, uint64_t pc)
{
        uint64_t generation = address_space__generation(space);
        struct class_slot *slot = &py->class_cache[(pc * 0x9e3779b97f4a7c15ull) >> 54];
        enum native_class cls;

        if (slot->pc == pc && slot->generation == generation)
                return slot->cls;
        if (!class_of_range(py, pc, generation, &cls))
                cls = classify_uncached(py, space, pc, generation);
        *slot = (struct class_slot){.pc = pc, .generation = generation, .cls = cls};
        return cls;
}

/* The thread's result block, with room for `capacity` frames. */
static struct merged_stack *result_for(struct capture *capture, size_t capacity)
{
        struct merged_stack *result = capture->interp.result;

        if (result && result->capacity >= capacity)
                return result;
        free(result);
        capture->interp.result = result = merged_stack__new(capacity);
        return result;
}

/* After a chunk switch, cache the new chunk for the next sample. */
static void follow_chunk(struct py_process *py, struct py_thread *t, const struct capture *capture)
{
        const struct py_offsets *o = py->runtime.offsets;
        const uint8_t *tstate = capture__interp_at(capture, t->tstate, o->tstate_size);
        uint64_t chunk;

        if (!tstate || !o->tstate_datastack_chunk)
                return;
        memcpy(&chunk, tstate + o->tstate_datastack_chunk, sizeof(chunk));
        if (chunk != t->chunk)
                py->unmapped_seen = true; /* the next refresh reads its size */
}

static const char *gil_label(const struct py_process *py, const struct py_thread *t,
                             const struct capture *capture)
{
        const struct py_offsets *o = py->runtime.offsets;
        size_t len = py_gil__region_len(o);
        const uint8_t *region = t->gil ? capture__interp_at(capture, t->gil, len) : NULL;

        switch (py_gil__holder_is(o, region, len, t->tstate)) {
        case PY_GIL_HELD:
                return "true";
        case PY_GIL_NOT_HELD:
                return "false";
        case PY_GIL_UNKNOWN:
                break;
        }
        return NULL;
}

/* The running task's name and the span of its own context. */
static void read_task(struct py_process *py, const struct py_thread *t,
                      const struct capture *capture, uint64_t now_ns, struct task_read *out)
{
        const char *trace_id, *span_id;
        const uint8_t *copy = NULL;
        uint64_t task, context;

        *out = (struct task_read){.tid = capture->tid, .time_ns = capture->time_ns};
        out->name = py_asyncio__task_name(&py->asyncio, t, capture, now_ns, &task);
        if (!task)
                return;
        /* The context and its variables as the stop window copied them:
         * the task may have left its span, or ended, since. */
        if ((context = py_asyncio__copied_context(&py->asyncio, capture, task)))
                copy = capture__interp_at(capture, context, PY_TASK_SPAN_CONTEXT_COPY);
        else if (remote_memory__read(py->pid, task + py->asyncio.offsets.task_context, &context,
                                     sizeof(context)) != sizeof(context))
                return;
        switch (py_task_span__read(&py->task_span, capture, context, copy, now_ns, &trace_id,
                                   &span_id)) {
        case PY_TASK_SPAN_UNKNOWN:
                break;
        case PY_TASK_SPAN_NONE:
        case PY_TASK_SPAN_STALE: /* no span rather than maybe another's */
                out->span = 1;
                break;
        case PY_TASK_SPAN_FOUND:
                out->span = 2;
                snprintf(out->trace_id, sizeof(out->trace_id), "%s", trace_id);
                snprintf(out->span_id, sizeof(out->span_id), "%s", span_id);
                break;
        }
}

static struct task_read *task_read_slot(struct py_process *py, pid_t tid)
{
        return &py->task_reads[(uint32_t)tid % TASK_READS];
}

void py_process__read_task(struct py_process *py, const struct capture *capture)
{
        const struct py_thread *t = py_threads__find(&py->threads, capture->tid, 0);

        if (t && capture->interp.n_regions > 0)
                read_task(py, t, capture, monotonic_ns(), task_read_slot(py, capture->tid));
}

/* The labels py_process__read_task read for this capture, or read now. */
static void task_labels(struct py_process *py, const struct py_thread *t,
                        const struct capture *capture, uint64_t now_ns, struct merged_stack *out)
{
        struct task_read *slot = task_read_slot(py, capture->tid), now;

        if (slot->tid != capture->tid || slot->time_ns != capture->time_ns) {
                read_task(py, t, capture, now_ns, &now);
                slot = &now;
        }
        out->asyncio_task = slot->name;
        out->task_span = slot->span;
        snprintf(out->task_trace_id, sizeof(out->task_trace_id), "%s", slot->trace_id);
        snprintf(out->task_span_id, sizeof(out->task_span_id), "%s", slot->span_id);
}

const struct merged_stack *py_process__merge(struct py_process *py, struct address_space *space,
                                             struct capture *capture,
                                             const struct thread_stack *native,
                                             enum native_mode mode, bool *failed)
{
        struct py_thread *t = py_threads__find(&py->threads, capture->tid, 0);
        struct py_walk walk = {
            .runtime = &py->runtime,
            .codes = &py->codes,
            .capture = capture,
            .now_ns = monotonic_ns(),
            .items = py->scratch->items,
            .seen = py->scratch->seen,
            .seen_used = py->scratch->seen_used,
        };
        struct merged_stack *out;

        *failed = false;
        if (t && capture->interp.n_regions > 0) {
                follow_chunk(py, t, capture);
                py_frame__walk(&walk, t->tstate);
        }
        out = result_for(capture, native->n_pcs + walk.n_items + 1);
        if (!out)
                return NULL;
        out->n = 0;
        out->has_thread_ident = t != NULL;
        out->thread_ident = t ? t->pthread : 0;
        /* Kept with the stack: an idle thread's reused sample is labelled
         * after its copy was given back, and it has not run since. */
        out->gil = t ? gil_label(py, t, capture) : NULL;
        out->asyncio_task = NULL;
        out->task_span = 0;
        if (t && capture->interp.n_regions > 0)
                task_labels(py, t, capture, walk.now_ns, out);
        if (walk.n_frames == 0 || !space)
                return out;
        if (ARRAY_RESERVE(py->classes, py->classes_capacity, native->n_pcs) < 0)
                return NULL;
        for (size_t i = 0; i < native->n_pcs; i++)
                py->classes[i] = classify(py, space, native->pcs[i]);
        struct merge_input in = {
            .pcs = native->pcs,
            .sps = native->sps,
            .classes = py->classes,
            .n_pcs = native->n_pcs,
            .native_truncated = native->truncated,
            .items = walk.items,
            .n_items = walk.n_items,
            .python_truncated = walk.truncated,
            /* 3.9/3.10: a walk cut before the depth cap followed a
             * chain that moved (frames beyond the stop window's copies are
             * read live); 3.11+ copy their chain with the chunk. */
            .python_torn = walk.truncated && walk.n_frames < PY_MAX_FRAMES &&
                           py->runtime.offsets->model == PY_FRAMES_OBJECTS,
            .mode = mode,
        };
        stack_merge__merge(&in, out);
        *failed = out->failed;
        return out;
}

bool py_process__sample_reusable(struct py_process *py, const struct capture *capture)
{
        struct py_thread *t = py_threads__find(&py->threads, capture->tid, 0);

        if (capture->interp.n_regions > 0) {
                if (t)
                        t->stateless = 0;
                return true;
        }
        if (!t) /* every unmapped sample so far came before the last refresh */
                return py->last_refresh_ns > py->unmapped_sample_ns;
        return ++t->stateless > PY_STATELESS_TRIES;
}

/* Whether the name table is worth re-reading for this thread's sample: a
 * thread missing from it, at most every PY_NAMES_RETRY_NS; one without a
 * threading name yet, PY_NAMES_TRIES times with the wait doubling, after
 * which it is taken for a thread threading does not list (_thread's);
 * every PY_NAMES_REFRESH_NS for renames. */
static bool names_due(const struct py_thread_names *names, const struct py_thread_name *entry,
                      uint64_t now_ns)
{
        static const struct backoff_policy unnamed = {
            .first_ns = PY_NAMES_RETRY_NS,
            .max_ns = PY_NAMES_RETRY_NS << (PY_NAMES_TRIES - 1),
            .retries = PY_NAMES_TRIES,
        };
        uint64_t elapsed = now_ns - names->refreshed_ns;

        if (elapsed >= PY_NAMES_REFRESH_NS)
                return true;
        if (!entry)
                return elapsed >= PY_NAMES_RETRY_NS;
        /* misses: the refreshes so far that found it without a name */
        return entry->misses &&
               backoff_policy__due(&unnamed, entry->misses, names->refreshed_ns, now_ns);
}

static const char *python_name(struct py_process *py, const struct py_thread *t, pid_t tid)
{
        uint64_t now_ns = monotonic_ns();
        const struct py_thread_name *entry = py_thread_names__find(&py->names, t->pthread, tid);

        if (names_due(&py->names, entry, now_ns)) {
                py_thread_names__refresh(&py->names, py->pid, &py->runtime, &py->threads, now_ns);
                entry = py_thread_names__find(&py->names, t->pthread, tid);
        }
        return entry ? entry->name : NULL;
}

void py_process__label(struct py_process *py, const struct capture *capture,
                       struct py_labels *labels)
{
        struct py_thread *t = py_threads__find(&py->threads, capture->tid, 0);
        const struct merged_stack *merged = capture->interp.result;
        const char *name;

        if (!t)
                return;
        labels->gil = merged ? merged->gil : NULL;
        name = python_name(py, t, capture->tid);
        if (name && *name)
                labels->thread_name = name;
        labels->asyncio_task = merged ? merged->asyncio_task : NULL;
        labels->task_span = merged && merged->task_span;
        if (merged && merged->task_span == 2) {
                labels->trace_id = merged->task_trace_id;
                labels->span_id = merged->task_span_id;
        }
}
