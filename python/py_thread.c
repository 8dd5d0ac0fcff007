/* py_thread.c — which PyThreadState is which OS thread.
 *
 * Why: samples are taken per OS thread (tid), Python frames hang off
 * thread states, and the stop window must find a thread's state without
 * searching the target.
 *
 * How: after the resume, and only when a sampled thread is unmapped or
 * every PY_THREADS_REFRESH_NS, each interpreter's thread list is read
 * (one read per thread state, PY_MAX_THREADS in all, PY_MAX_INTERPS
 * interpreters, a repeated address ends a list).
 *   3.11+     native_thread_id is the kernel tid.
 *   3.9/3.10  thread_id is the pthread_t, i.e. the address of glibc's
 *             struct pthread, whose tid field (GLIBC_PTHREAD_TID_OFFSET) is
 *             read and accepted only if it is one of the target's tids.
 * Both are the target's own ids, which in a container (its own PID
 * namespace) differ from ours: they are looked up among the target's ids
 * (the caller's ns_tids, read from /proc once per thread) and the
 * thread is then known by ours.
 *             A stopped thread is also matched exactly by its fs_base
 *             register, which on x86-64 glibc equals pthread_self().
 * The 3.11+ data-stack chunk address (what the stop window copies) and
 * its size are read here too, and where the interpreter's GIL says who
 * holds it (py_gil; one read per interpreter on 3.12). */
#include "python/py_thread.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_gil.h"
#include "util/array.h"
#include "util/cleanup.h"

/* The target's threads: our ids and theirs (in its PID namespace). */
struct tid_map {
        const pid_t *tids, *ns_tids;
        size_t n;
};

static uint64_t u64_at(const uint8_t *data, uint64_t offset)
{
        uint64_t value;

        memcpy(&value, data + offset, sizeof(value));
        return value;
}

/* Our id of the thread the target knows as `ns_tid`, or 0. */
static pid_t our_tid(const struct tid_map *map, pid_t ns_tid)
{
        for (size_t i = 0; i < map->n; i++)
                if (map->ns_tids[i] == ns_tid)
                        return map->tids[i];
        return 0;
}

static const struct py_thread *old_entry(const struct py_thread *old, size_t n, uint64_t tstate,
                                         uint64_t pthread)
{
        for (size_t i = 0; i < n; i++)
                if (old[i].tstate == tstate && old[i].pthread == pthread)
                        return &old[i];
        return NULL;
}

static void read_chunk(pid_t pid, struct py_thread *t, uint64_t chunk, const struct py_offsets *o)
{
        uint64_t size;

        t->chunk = 0;
        t->chunk_len = 0;
        if (chunk < 4096 ||
            remote_memory__read(pid, chunk + o->chunk_size, &size, sizeof(size)) != sizeof(size))
                return;
        t->chunk = chunk;
        t->chunk_len = size < PY_CHUNK_COPY_MAX ? size : PY_CHUNK_COPY_MAX;
}

static pid_t tid_of(pid_t pid, const struct py_offsets *o, const uint8_t *tstate, uint64_t pthread,
                    const struct tid_map *map)
{
        int32_t tid = 0;

        if (o->tstate_native_thread_id) {
                tid = (int32_t)u64_at(tstate, o->tstate_native_thread_id);
        } else if (pthread >= 4096 && remote_memory__read(pid, pthread + GLIBC_PTHREAD_TID_OFFSET,
                                                          &tid, sizeof(tid)) != sizeof(tid)) {
                tid = 0;
        }
        return tid > 0 ? our_tid(map, tid) : 0;
}

static bool seen_tstate(const struct py_threads *threads, uint64_t tstate)
{
        for (size_t i = 0; i < threads->n; i++)
                if (threads->v[i].tstate == tstate)
                        return true;
        return false;
}

static int add_thread(struct py_threads *out, const struct py_thread *t)
{
        if (ARRAY_RESERVE(out->v, out->capacity, out->n + 1) < 0)
                return -ENOMEM;
        out->v[out->n++] = *t;
        return 0;
}

/* Reads one interpreter's list into `out`; returns its `next` or 0. */
static int read_interp(struct py_threads *out, const struct py_thread *old, size_t n_old, pid_t pid,
                       const struct py_runtime *runtime, uint64_t interp, const struct tid_map *map,
                       uint64_t *next)
{
        const struct py_offsets *o = runtime->offsets;
        uint8_t tstate[4096];
        uint64_t address = 0, gil;

        *next = 0;
        if (remote_memory__read(pid, interp + o->interp_next, next, sizeof(*next)) != 8 ||
            remote_memory__read(pid, interp + o->interp_threads_head, &address, 8) != 8)
                return 0;
        gil = py_gil__region(pid, runtime, interp);
        while (address && out->n < PY_MAX_THREADS) {
                struct py_thread t = {.tstate = address, .gil = gil};
                if ((address & 7) || seen_tstate(out, address) ||
                    remote_memory__read(pid, address, tstate, o->tstate_size) !=
                        (ssize_t)o->tstate_size ||
                    u64_at(tstate, o->tstate_interp) != interp)
                        break;
                t.pthread = u64_at(tstate, o->tstate_thread_id);
                t.tid = tid_of(pid, o, tstate, t.pthread, map);
                const struct py_thread *before = old_entry(old, n_old, address, t.pthread);
                if (!t.tid && before)
                        t.tid = before->tid;
                if (o->tstate_datastack_chunk)
                        read_chunk(pid, &t, u64_at(tstate, o->tstate_datastack_chunk), o);
                if (before && before->chunk == t.chunk && before->chunk_len == t.chunk_len)
                        t.chunk_used = before->chunk_used;
                if (before)
                        t.stateless = before->stateless;
                if (add_thread(out, &t) < 0)
                        return -ENOMEM;
                address = u64_at(tstate, o->tstate_next);
        }
        return 0;
}

struct tid_entry {
        pid_t tid;
        size_t index;
};

static int by_tid_then_index(const void *a, const void *b)
{
        const struct tid_entry *x = a, *y = b;

        if (x->tid != y->tid)
                return x->tid < y->tid ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* A thread state created for a new thread starts with its creator's
 * thread_id (3.9/3.10 set it before the thread runs), so for a moment two
 * states name the same OS thread.  States are listed newest first: on a
 * clash the older state (later in the list) keeps the tid and the newer
 * one is left unmapped until it has its own id. */
static void unmap_duplicate_tids(struct py_threads *threads)
{
        _cleanup_free_ struct tid_entry *entries = calloc(threads->n + 1, sizeof(*entries));
        size_t n = 0;

        if (!entries)
                return;
        for (size_t i = 0; i < threads->n; i++)
                if (threads->v[i].tid)
                        entries[n++] = (struct tid_entry){threads->v[i].tid, i};
        qsort(entries, n, sizeof(*entries), by_tid_then_index);
        for (size_t i = 0; i + 1 < n; i++)
                if (entries[i].tid == entries[i + 1].tid)
                        threads->v[entries[i].index].tid = 0;
}

int py_threads__refresh(struct py_threads *threads, pid_t pid, const struct py_runtime *runtime,
                        const pid_t *tids, const pid_t *ns_tids, size_t n_tids)
{
        const struct tid_map map = {tids, ns_tids, n_tids};
        struct py_threads fresh = {0};
        uint64_t interp = py_runtime__first_interpreter(pid, runtime), next;
        int r = 0;

        for (int i = 0; interp && i < PY_MAX_INTERPS && r == 0; i++, interp = next)
                r = read_interp(&fresh, threads->v, threads->n, pid, runtime, interp, &map, &next);
        if (r < 0) {
                free(fresh.v);
                return r;
        }
        unmap_duplicate_tids(&fresh);
        free(threads->v);
        *threads = fresh;
        return 0;
}

void py_threads__clear(struct py_threads *threads)
{
        free(threads->v);
        memset(threads, 0, sizeof(*threads));
}

struct py_thread *py_threads__find(struct py_threads *threads, pid_t tid, uint64_t fs_base)
{
        for (size_t i = 0; i < threads->n; i++)
                if (threads->v[i].tid == tid)
                        return &threads->v[i];
        if (!fs_base)
                return NULL;
        for (size_t i = 0; i < threads->n; i++) {
                if (threads->v[i].pthread == fs_base && threads->v[i].tid == 0) {
                        threads->v[i].tid = tid;
                        return &threads->v[i];
                }
        }
        return NULL;
}
