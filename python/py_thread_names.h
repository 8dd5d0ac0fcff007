/* py_thread_names.h — threading.Thread.name of a target's Python threads. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_runtime.h"
#include "python/py_thread.h"

#define PY_THREAD_NAME_MAX  128 /* bytes of UTF-8 kept, never splitting a character */
#define PY_THREAD_NAMES_MAX 1024

struct py_thread_name {
        uint64_t ident; /* threading.get_ident() */
        pid_t tid;      /* OS thread it was seen on, 0 until known */
        /* Refreshes in a row that found the thread without a threading
         * name (an empty entry); 0 for a named one. */
        unsigned int misses;
        char name[PY_THREAD_NAME_MAX + 1];
};

struct py_thread_names {
        struct py_thread_name *v;
        size_t n;
        uint64_t active;       /* threading._active in the target, 0 until found */
        uint64_t refreshed_ns; /* last refresh (CLOCK_MONOTONIC), 0 = never */
};

/* Re-reads threading._active (after the resume; a few reads per thread,
 * plus one per sys.modules entry the first time).  `threads` gives the OS
 * thread of each ident.  Keeps the old table when nothing can be read. */
void py_thread_names__refresh(struct py_thread_names *names, pid_t pid,
                              const struct py_runtime *runtime, const struct py_threads *threads,
                              uint64_t now_ns);

/* The entry of the thread `ident` running as OS thread `tid`: its name is
 * "" for a Python thread threading does not name (yet: see misses); NULL
 * when the ident is not in the table or now belongs to another OS thread
 * (time to refresh). */
const struct py_thread_name *py_thread_names__find(struct py_thread_names *names, uint64_t ident,
                                                   pid_t tid);

void py_thread_names__clear(struct py_thread_names *names);
