/* maps_reader.h — a worker thread that reads /proc/PID/maps (and, for
 * watch mode's discovery, /proc/PID/environ) for the tracer thread, so
 * that the tracer never waits on another process's mmap or exec lock.
 *
 * Why: the kernel formats the maps under the target's mmap lock, which a
 * starting process holds for write while it maps its libraries; on a
 * loaded host a read waited 40-77 ms with 2-5 ms of CPU (bench/RESULTS.md),
 * and every ptrace event of every target waited with it.  The worker does
 * the waiting; the text comes back by message and the tracer parses and
 * reports it (CPU work, cached by build-id).
 *
 * Threads share nothing but the two pipes: a request carries a pid and the
 * caller's serial, a reply carries them back with the text, whose
 * ownership passes to whoever takes the reply.  Neither side blocks on the
 * other: a request or a reply that does not fit its pipe is dropped (the
 * asker asks again after a while), so a slow worker never holds the
 * tracer and a tracer that stopped taking replies never holds the worker. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct maps_reader {
        int request_fd[2]; /* tracer -> worker; -1 when not running */
        int reply_fd[2];   /* worker -> tracer */
        pthread_t thread;
        bool running;
};

/* What a request reads: the maps, or (for watch mode's discovery, whose
 * look at a starting process waits on its exec and mmap locks just the
 * same) the environment, its first MAPS_READER_ENVIRON_MAX bytes. */
enum maps_reader_what { MAPS_READER_MAPS, MAPS_READER_ENVIRON };
#define MAPS_READER_ENVIRON_MAX (64 * 1024)

struct maps_reply {
        pid_t pid;
        int what;        /* enum maps_reader_what, as asked */
        int error;       /* 0, or -errno of the read (text NULL then) */
        uint64_t serial; /* as asked */
        char *text;      /* malloc'ed, the taker frees it */
        size_t len;
};

#define MAPS_READER_INIT                                                                           \
        {                                                                                          \
                .request_fd = {-1, -1}, .reply_fd = { -1, -1 }                                     \
        }

/* Starts the worker (all signals blocked in it).  0 or -errno; on failure
 * the reader stays not running and maps_reader__ask answers false. */
int maps_reader__start(struct maps_reader *reader);
/* Stops and joins the worker (it finishes the read it is in, at most one
 * lock wait) and frees the replies nobody took.  Accepts a reader never
 * started (MAPS_READER_INIT) and one stopped already. */
void maps_reader__stop(struct maps_reader *reader);
/* Asks for /proc/`pid`/maps; never blocks.  false when not running or the
 * request pipe is full (the caller reads the maps itself or asks later). */
bool maps_reader__ask(struct maps_reader *reader, pid_t pid, uint64_t serial);
/* The same for `what` (enum maps_reader_what). */
bool maps_reader__ask_for(struct maps_reader *reader, pid_t pid, uint64_t serial, int what);
/* The descriptor that polls readable while a reply waits, or -1. */
int maps_reader__fd(const struct maps_reader *reader);
/* Takes one reply waiting, never blocks; false when none waits. */
bool maps_reader__take(struct maps_reader *reader, struct maps_reply *reply);
