/* target_common.h — helpers shared by the test targets (header only, C and
 * C++).  Every target names its threads (pthread_setname_np, i.e. comm),
 * waits on a barrier until all of them run, then prints "ready". */
#pragma once

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void target_check(const char *what, int err)
{
        if (err) {
                fprintf(stderr, "target: %s: %s\n", what, strerror(err));
                exit(1);
        }
}

/* Called first thing by each thread function. */
static inline void target_thread_started(const char *name, pthread_barrier_t *started)
{
        target_check("pthread_setname_np", pthread_setname_np(pthread_self(), name));
        pthread_barrier_wait(started);
}

static inline pthread_t target_spawn(void *(*fn)(void *))
{
        pthread_t thread;

        target_check("pthread_create", pthread_create(&thread, NULL, fn, NULL));
        return thread;
}

static inline void target_ready(void)
{
        fputs("ready\n", stdout);
        fflush(stdout);
}
