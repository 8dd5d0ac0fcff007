/* ptrace_events.h — the tracer's side of every waitpid() status.
 *
 * Policy stays with the caller: the only decision delegated is what to do
 * while a thread sits in the stop we asked for (capture it).  Everything
 * else is fixed here, because getting it wrong harms the target:
 *   - signals are re-injected at once, unchanged;
 *   - a group-stop (SIGSTOP, SIGTSTP, ...) is held with PTRACE_LISTEN, so
 *     the target stays stopped until its SIGCONT, as without us;
 *   - new threads and exec are followed, and new processes when the
 *     target was seized with follow_forks;
 *   - a thread of a target being released is detached at its next
 *     ptrace-stop instead of resumed (a tracee nobody claims, too);
 *   - every other stop is resumed immediately. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "attach/target_set.h"
#include "util/clock.h"

struct ptrace_event_handlers {
        /* `thread` stopped because we interrupted it; it is resumed as soon
         * as this returns, and thread->last_pause_ns is set. */
        void (*on_interrupt_stop)(void *arg, struct target *target, struct tthread *thread);
        /* Right after that stop's resume (may be NULL): the thread runs
         * again, so reading its /proc files is allowed here. */
        void (*on_resumed)(void *arg, struct target *target, struct tthread *thread);
        /* The process exited, or execed (`execed` set; mappings changed).
         * At exec the caller may set target->releasing: the leader is then
         * detached in the exec stop, before the new program runs. */
        void (*on_target_changed)(void *arg, struct target *target);
        /* A target forked `child`, which the kernel attached for us
         * (PTRACE_O_TRACEFORK): the caller adds it to the set, or not, in
         * which case it is detached at its first stop.  NULL: never. */
        void (*on_fork)(void *arg, struct target *parent, pid_t child);
        /* Any exit waitpid reported, before it is handled: a target's
         * thread, or a child of this process (traced or not), whose exit
         * status nobody else can read once reaped here.  NULL: none. */
        void (*on_exit_status)(void *arg, pid_t tid, int status);
};

struct ptrace_event_counts {
        uint64_t signals_reinjected;
        uint64_t threads_created;
        uint64_t threads_exited;
        uint64_t group_stops;
        uint64_t eintr_repaired;
        uint64_t forks_followed;
        uint64_t threads_detached;
        uint64_t interrupts_consumed; /* by another stop of the thread (no sample) */
};

/* Sends PTRACE_INTERRUPT and notes the time.  0 or -errno. */
int ptrace_events__interrupt(struct tthread *thread);

void ptrace_events__handle(struct target_set *set, pid_t tid, int status,
                           const struct ptrace_event_handlers *handlers, void *arg,
                           struct ptrace_event_counts *counts);

/* Handles every status already waiting (WNOHANG).  Returns how many, or
 * -ECHILD when no tracee is left. */
int ptrace_events__drain(struct target_set *set, const struct ptrace_event_handlers *handlers,
                         void *arg, struct ptrace_event_counts *counts);
