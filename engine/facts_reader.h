/* facts_reader.h — watch mode's look at a process, off the tracer thread.
 *
 * Whether a discovered process is profiled depends on its environment
 * (the label, env: rules) and, for an unlabelled one, on whether its maps
 * show a span-context segment.  Reading either waits on the process: its
 * environ on the exec lock while it executes, both on its mmap lock while
 * the loader maps its libraries, 70-830 ms for one look on a loaded host
 * (bench/RESULTS.md), during which no target's ptrace event was answered.
 * So a look is asked of a worker of its own (a maps_reader: the tick's
 * and set-up's maps reads are not queued behind a /proc scan's looks at
 * every process of the host), and the verdict is taken when both texts
 * are back.  The cheap facts (exe, uid, cgroup) are read by the caller
 * then.
 *
 * A look is one environ request and one maps request with one serial; the
 * worker answers in order, so the maps reply completes the look.  Asking
 * again for a pid (its exec) supersedes the look in flight.  A look whose
 * replies the full pipes dropped is forgotten after FACTS_LOOK_TIMEOUT_NS
 * (the /proc scan examines the pid again).  Tracer thread only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/maps_reader.h"

struct facts_look {
        pid_t pid;
        int previous; /* the discovery state it had when asked (-1: new) */
        uint64_t serial, asked_ns;
        char *environ; /* once its reply came; owned */
        size_t environ_len;
        int environ_error; /* 0, or -errno of the read */
        bool environ_in;
};

struct facts_reader {
        struct maps_reader worker;
        bool tried; /* the worker was started (or failed to) */
        struct facts_look *looks;
        size_t n_looks, looks_capacity;
        uint64_t serial;
};

/* A finished look: its texts pass to the taker (facts_answer__release). */
struct facts_answer {
        pid_t pid;
        int previous;
        uint64_t asked_ns;
        char *environ, *maps;
        size_t environ_len, maps_len;
        int environ_error, maps_error;
};

#define FACTS_READER_INIT                                                                          \
        {                                                                                          \
                .worker = MAPS_READER_INIT                                                         \
        }

/* Asks for a look at `pid`.  false when the worker cannot take it (not
 * running, pipe full, too many looks): the caller looks itself. */
bool facts_reader__ask(struct facts_reader *reader, pid_t pid, int previous, uint64_t now_ns);
/* Whether a look at `pid` is in flight. */
bool facts_reader__asked(const struct facts_reader *reader, pid_t pid);
/* Takes one finished look, never blocks; false when none is ready.
 * Forgets looks older than the timeout on the way. */
bool facts_reader__take(struct facts_reader *reader, struct facts_answer *answer, uint64_t now_ns);
void facts_answer__release(struct facts_answer *answer);
/* Stops the worker and frees every look; accepts FACTS_READER_INIT. */
void facts_reader__release(struct facts_reader *reader);
