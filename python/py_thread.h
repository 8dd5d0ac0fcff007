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

struct py_threads {
        struct py_thread *v;
        size_t n, capacity;
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
