/* run_status.h — what the tracer tells the main thread while it runs,
 * by message (registry->status, util/mailbox.h), so that no other thread
 * reads the tracer's targets or counters: the progress line, the `top`
 * header and `top --thread` are drawn from the newest message.
 *
 * Sent once after every target is attached (before done_fd says 1), then
 * after every tick. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct registry;

struct run_status {
        uint64_t ticks, samples, skipped;
        uint64_t threads;      /* most threads alive at once */
        uint64_t live_targets; /* targets that have not exited */
        pid_t first_pid;       /* the first target given, 0 when none */
        char first_comm[16];
        /* --thread NAME|TID resolved against the attached threads: its tid,
         * -1 when no thread matched, 0 when no filter was asked for. */
        pid_t thread_filter_tid;
};

/* Tracer side: sends the registry's current status; never blocks. */
void run_status__send(struct registry *registry);
