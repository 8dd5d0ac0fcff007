/* py_thread.h — CPython thread states and the OS threads they belong to. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_runtime.h"

#define PY_MAX_THREADS    4096
#define PY_MAX_INTERPS    64
#define PY_CHUNK_COPY_MAX (64u << 10)
/* glibc x86-64 struct pthread: `tid` at 720 (0x2d0).  Measured on glibc
 * 2.36 by comparing pthread_self() + offset with gettid(); it has been
 * there since glibc 2.26.  Every value read through it is checked against
 * the target's real thread ids before it is trusted. */
#define GLIBC_PTHREAD_TID_OFFSET 720

struct py_thread {
        pid_t tid;        /* OS thread, 0 while unknown */
        uint64_t tstate;  /* PyThreadState address */
        uint64_t pthread; /* tstate->thread_id: pthread_self(), threading.get_ident() */
        uint64_t chunk;   /* 3.11+: data-stack chunk to copy, 0 = none */
        size_t chunk_len;
        size_t chunk_used; /* its used part at the last capture, 0 = unknown */
        uint64_t gil;      /* GIL bytes copied with the tstate (py_gil), 0 = none */
        /* Samples in a row taken without its state while it was known
         * (py_process__sample_reusable). */
        unsigned int stateless;
};

/* Entries the stop window may add (py_threads__seek) beyond those of the
 * last refresh: room kept by every refresh. */
#define PY_THREADS_SPARE 32
/* Threads the stop window looks for in the thread lists, by tid, each at
 * most PY_SEEK_TRIES samples in a row (a thread that never runs Python
 * code costs that many walks, then none until its slot is reused), each
 * walk reading at most PY_SEEK_STATES thread states from the lists' heads,
 * where CPython inserts new ones. */
#define PY_SEEK_SLOTS  64
#define PY_SEEK_TRIES  4
#define PY_SEEK_STATES 16

#define PY_SEEK_INTERPS 4
/* The data-stack chunk CPython gives a new thread (3.11-3.15:
 * DATA_STACK_CHUNK_SIZE, 16 KiB; a bigger one only for a first frame that
 * needs it), taken as the size of one found in the stop window. */
#define PY_NEW_CHUNK_BYTES (16u << 10)

struct py_seek {
        pid_t tid;
        unsigned int misses;
};

/* An interpreter the stop window walks, as the last refresh saw it. */
struct py_seek_interp {
        uint64_t address, gil;
};

struct py_threads {
        struct py_thread *v;
        size_t n, capacity;
        /* The target's thread ids are ours (no PID namespace of its own) at
         * the last refresh: a thread may be matched by native_thread_id. */
        bool ids_ours;
        struct py_seek seeks[PY_SEEK_SLOTS];
        size_t next_seek;
        struct py_seek_interp interps[PY_SEEK_INTERPS];
        size_t n_interps;
};

/* Re-reads every interpreter's thread list (bounded, cycle-safe) and maps
 * thread states to OS threads: native_thread_id on 3.11+; on 3.9/3.10 the
 * tid glibc keeps in struct pthread (thread_id is the pthread_t).  Both
 * are ids in the target's own PID namespace: one is accepted only if it is
 * in `ns_tids`, and stands for the tid at the same index of `tids` (ours).
 * Mappings learned from fs_base are kept.  0 or -errno. */
int py_threads__refresh(struct py_threads *threads, pid_t pid, const struct py_runtime *runtime,
                        const pid_t *tids, const pid_t *ns_tids, size_t n_tids);
void py_threads__clear(struct py_threads *threads);

/* The thread state of `tid`; when unknown and fs_base is not 0 (a stopped
 * thread's register, equal to pthread_self() on x86-64 glibc), the thread
 * whose pthread_t matches, which is then remembered.  No allocation: safe
 * inside the stop window. */
struct py_thread *py_threads__find(struct py_threads *threads, pid_t tid, uint64_t fs_base);

/* Inside the stop window, for a thread py_threads__find does not know (a
 * thread started since the last refresh, which saw no state for it or
 * none with its ids yet): reads the interpreters' thread lists from their
 * heads, PY_SEEK_STATES thread states at most, for the one whose
 * thread_id is fs_base (a stopped thread's register; 0 = none) or, on
 * 3.11+ when the ids are ours, whose native_thread_id is tid.  The state
 * found is remembered for tid (in its entry of the last refresh, or in
 * spare room), with its GIL region and data-stack chunk, whose size is
 * taken to be PY_NEW_CHUNK_BYTES until the next refresh reads it (the
 * caller asks for one).  The interpreters are those of the last refresh
 * (PY_SEEK_INTERPS at most): one read of a list's head, one per thread
 * state.  Bounded reads, no allocation.  NULL when not found (counted: after PY_SEEK_TRIES such
 * samples in a row tid is not looked for again) or not looked for. */
struct py_thread *py_threads__seek(struct py_threads *threads, pid_t pid,
                                   const struct py_runtime *runtime, pid_t tid, uint64_t fs_base);

/* Whether a capture of tid, unknown to the map, would still look for its
 * state (py_threads__seek): true for a tid never looked for. */
bool py_threads__seeking(const struct py_threads *threads, pid_t tid);
