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
 * holds it (py_gil; one read per interpreter on 3.12).
 *
 * A thread started since the last refresh would wait for the next one (it
 * runs after the resume of its first sample, at most every 20 ms): its
 * first samples, a thread-per-request server's whole requests, had no
 * Python frames.  The stop window therefore looks for an unknown thread
 * itself (py_threads__seek): its state is among the first of a list,
 * where CPython inserts new states, and is the one whose thread_id is the
 * stopped thread's fs_base, or whose native_thread_id is its tid.  The
 * entry goes into room every refresh keeps spare; the next refresh finds
 * it in the list and keeps its tid (old_entry). */
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

        threads->n_interps = 0;
        for (int i = 0; interp && i < PY_MAX_INTERPS && r == 0; i++, interp = next) {
                if (threads->n_interps < PY_SEEK_INTERPS)
                        threads->interps[threads->n_interps++] = (struct py_seek_interp){
                            .address = interp, .gil = py_gil__region(pid, runtime, interp)};
                r = read_interp(&fresh, threads->v, threads->n, pid, runtime, interp, &map, &next);
        }
        if (r < 0) {
                free(fresh.v);
                return r;
        }
        unmap_duplicate_tids(&fresh);
        /* Room for the states the stop window finds before the next refresh. */
        (void)ARRAY_RESERVE(fresh.v, fresh.capacity, fresh.n + PY_THREADS_SPARE);
        free(threads->v);
        threads->v = fresh.v;
        threads->n = fresh.n;
        threads->capacity = fresh.capacity;
        threads->ids_ours = true;
        for (size_t i = 0; i < n_tids; i++)
                threads->ids_ours &= tids[i] == ns_tids[i];
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

static struct py_seek *seek_slot(struct py_threads *threads, pid_t tid)
{
        struct py_seek *slot;

        for (size_t i = 0; i < PY_SEEK_SLOTS; i++)
                if (threads->seeks[i].tid == tid)
                        return &threads->seeks[i];
        slot = &threads->seeks[threads->next_seek];
        threads->next_seek = (threads->next_seek + 1) % PY_SEEK_SLOTS;
        *slot = (struct py_seek){.tid = tid};
        return slot;
}

bool py_threads__seeking(const struct py_threads *threads, pid_t tid)
{
        for (size_t i = 0; i < PY_SEEK_SLOTS; i++)
                if (threads->seeks[i].tid == tid)
                        return threads->seeks[i].misses < PY_SEEK_TRIES;
        return true;
}

static struct py_thread *entry_of_tstate(struct py_threads *threads, uint64_t tstate)
{
        for (size_t i = 0; i < threads->n; i++)
                if (threads->v[i].tstate == tstate)
                        return &threads->v[i];
        return NULL;
}

/* Whether a copied thread state is the thread's: no other live thread has
 * its pthread_self() or its tid, so an entry of the map that says another
 * thread owns this state is stale (thread-per-request: a dead thread's
 * state memory, and its pthread, are reused for the next).  The one state
 * mistaken: on 3.9-3.11 one CPython made for a thread this thread starts
 * carries this thread's ids until that thread runs; the next refresh
 * then gives this thread the older state (unmap_duplicate_tids). */
static bool is_thread(const struct py_offsets *o, const uint8_t *tstate, uint64_t fs_base,
                      pid_t native_id)
{
        if (fs_base && u64_at(tstate, o->tstate_thread_id) == fs_base)
                return true;
        return native_id && o->tstate_native_thread_id &&
               (int32_t)u64_at(tstate, o->tstate_native_thread_id) == native_id;
}

/* Maps tid to the state at `address` (copied in `tstate`), in its entry
 * of the last refresh or in spare room; NULL when there is none. */
static struct py_thread *adopt(struct py_threads *threads, const struct py_offsets *o,
                               uint64_t address, const uint8_t *tstate,
                               const struct py_seek_interp *interp, pid_t tid)
{
        struct py_thread *t = entry_of_tstate(threads, address);
        uint64_t chunk = o->tstate_datastack_chunk ? u64_at(tstate, o->tstate_datastack_chunk) : 0;

        if (!t) {
                if (threads->n >= threads->capacity)
                        return NULL;
                t = &threads->v[threads->n++];
        }
        *t = (struct py_thread){
            .tid = tid,
            .tstate = address,
            .pthread = u64_at(tstate, o->tstate_thread_id),
            .gil = interp->gil,
        };
        if (chunk >= 4096) {
                t->chunk = chunk;
                t->chunk_len = PY_NEW_CHUNK_BYTES;
        }
        return t;
}

struct py_thread *py_threads__seek(struct py_threads *threads, pid_t pid,
                                   const struct py_runtime *runtime, pid_t tid, uint64_t fs_base)
{
        const struct py_offsets *o = runtime->offsets;
        pid_t native_id = threads->ids_ours ? tid : 0;
        struct py_seek *seek;
        uint64_t address = 0;
        uint8_t tstate[4096];
        int budget = PY_SEEK_STATES;

        if (!fs_base && !(native_id && o->tstate_native_thread_id))
                return NULL;
        seek = seek_slot(threads, tid);
        if (seek->misses >= PY_SEEK_TRIES)
                return NULL;
        for (size_t i = 0; i < threads->n_interps && budget > 0; i++) {
                const struct py_seek_interp *interp = &threads->interps[i];
                if (remote_memory__read(pid, interp->address + o->interp_threads_head, &address,
                                        sizeof(address)) != sizeof(address))
                        continue;
                for (; address && budget > 0; budget--, address = u64_at(tstate, o->tstate_next)) {
                        if ((address & 7) ||
                            remote_memory__read(pid, address, tstate, o->tstate_size) !=
                                (ssize_t)o->tstate_size ||
                            u64_at(tstate, o->tstate_interp) != interp->address)
                                break;
                        if (!is_thread(o, tstate, fs_base, native_id))
                                continue;
                        struct py_thread *t = adopt(threads, o, address, tstate, interp, tid);
                        if (t)
                                seek->tid = 0; /* found: the slot is free */
                        else
                                seek->misses++;
                        return t;
                }
        }
        seek->misses++;
        return NULL;
}
