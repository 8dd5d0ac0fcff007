/* ptrace_events.c — see ptrace_events.h.
 *
 * Stops of a PTRACE_SEIZE'd thread, as ptrace(2) describes them:
 *   status>>16 == PTRACE_EVENT_STOP, WSTOPSIG == SIGTRAP: our interrupt, the
 *       first stop of a new thread, or the end of a group-stop;
 *   status>>16 == PTRACE_EVENT_STOP, WSTOPSIG a stop signal: group-stop;
 *   status>>16 == PTRACE_EVENT_CLONE / _EXEC: thread creation, exec;
 *   status>>16 == 0: signal-delivery-stop, the signal is WSTOPSIG. */
#include "attach/ptrace_events.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "attach/syscall_restart.h"

int ptrace_events__interrupt(struct tthread *thread)
{
        thread->interrupt_ns = monotonic_ns();
        if (ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) < 0)
                return -errno;
        thread->interrupt_pending = true;
        return 0;
}

static bool is_stop_signal(int sig)
{
        return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void resume(pid_t tid, int sig)
{
        /* ESRCH means the thread died meanwhile; its exit status follows. */
        (void)ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
}

/* Ends a ptrace-stop: resume, or detach when the target is let go. */
static void finish_stop(struct target *target, struct tthread *thread, int sig,
                        struct ptrace_event_counts *counts)
{
        if (!target->releasing) {
                resume(thread->tid, sig);
                return;
        }
        counts->threads_detached++;
        target__detach_thread(target, thread, sig);
}

static void handle_exit(struct target_set *set, pid_t tid,
                        const struct ptrace_event_handlers *handlers, void *arg,
                        struct ptrace_event_counts *counts)
{
        struct tthread *thread;
        struct target *target = target_set__find(set, tid, &thread);

        if (!target)
                return;
        counts->threads_exited++;
        if (tid != target->pid) {
                target__remove_thread(target, tid);
                return;
        }
        target->gone = true;
        if (handlers->on_target_changed)
                handlers->on_target_changed(arg, target);
}

/* Our interrupt may have landed just as the thread blocked in a call that
 * fails with EINTR after a stop; undo that before it can see it. */
static void repair_eintr(struct target *target, struct tthread *thread,
                         struct ptrace_event_counts *counts)
{
        struct user_regs_struct regs;

        if (thread->captured && thread->capture.kind == CAPTURE_STOPPED)
                regs = thread->capture.regs;
        else if (ptrace(PTRACE_GETREGS, thread->tid, NULL, &regs) < 0)
                return;
        if (syscall_restart__repair_eintr(target->pid, thread->tid, &regs))
                counts->eintr_repaired++;
}

static void handle_our_interrupt(struct target *target, struct tthread *thread,
                                 const struct ptrace_event_handlers *handlers, void *arg,
                                 struct ptrace_event_counts *counts)
{
        thread->interrupt_pending = false;
        thread->stop_seen_ns = monotonic_ns();
        if (handlers->on_interrupt_stop && !target->releasing)
                handlers->on_interrupt_stop(arg, target, thread);
        repair_eintr(target, thread, counts);
        if (target->releasing) {
                finish_stop(target, thread, 0, counts);
                return;
        }
        resume(thread->tid, 0);
        thread->last_pause_ns = monotonic_ns() - thread->interrupt_ns;
        if (handlers->on_resumed)
                handlers->on_resumed(arg, target, thread);
}

static void handle_event_stop(struct target *target, struct tthread *thread, int sig,
                              const struct ptrace_event_handlers *handlers, void *arg,
                              struct ptrace_event_counts *counts)
{
        if (is_stop_signal(sig)) {
                /* Group-stop: hold it.  Our interrupt, if any, is void. */
                thread->interrupt_pending = false;
                thread->group_stopped = true;
                counts->group_stops++;
                (void)ptrace(PTRACE_LISTEN, thread->tid, NULL, NULL);
                return;
        }
        thread->group_stopped = false;
        if (thread->interrupt_pending) {
                handle_our_interrupt(target, thread, handlers, arg, counts);
                return;
        }
        finish_stop(target, thread, 0, counts);
}

/* fork/vfork of a target seized with follow_forks: the child is ours
 * already; the caller decides whether it becomes a target. */
static void handle_fork(struct target_set *set, struct target *target, struct tthread *thread,
                        const struct ptrace_event_handlers *handlers, void *arg,
                        struct ptrace_event_counts *counts)
{
        unsigned long child = 0;
        struct tthread *known;

        if (ptrace(PTRACE_GETEVENTMSG, thread->tid, NULL, &child) == 0 && child > 0 &&
            !target_set__find(set, (pid_t)child, &known) && !target->releasing &&
            handlers->on_fork) {
                handlers->on_fork(arg, target, (pid_t)child);
                counts->forks_followed++;
        }
        finish_stop(target, thread, 0, counts);
}

static void handle_clone(struct target *target, pid_t tid, struct ptrace_event_counts *counts)
{
        unsigned long new_tid = 0;

        if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &new_tid) == 0 && new_tid > 0) {
                /* If this fails (ENOMEM, thread already gone) the thread
                 * still runs; it is registered on its first stop. */
                (void)target__add_thread(target, (pid_t)new_tid);
                counts->threads_created++;
        }
        struct tthread *thread = target__find_thread(target, tid);
        if (thread)
                finish_stop(target, thread, 0, counts);
        else
                resume(tid, 0);
}

static void handle_exec(struct target *target, const struct ptrace_event_handlers *handlers,
                        void *arg, struct ptrace_event_counts *counts)
{
        struct tthread *leader;

        /* After exec the survivor has the leader's id, whatever it was. */
        target__reset_after_exec(target);
        if (handlers->on_target_changed)
                handlers->on_target_changed(arg, target);
        leader = target__find_thread(target, target->pid);
        if (leader)
                finish_stop(target, leader, 0, counts);
        else
                resume(target->pid, 0);
}

static pid_t ppid_of(pid_t pid)
{
        char path[64], line[128];
        int ppid = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "PPid: %d", &ppid) == 1)
                        break;
        fclose(f);
        return ppid;
}

/* The first stop of a forked child can come before its parent's fork
 * event: offer it to the caller now. */
static struct target *adopt_child(struct target_set *set, pid_t pid,
                                  const struct ptrace_event_handlers *handlers, void *arg,
                                  struct ptrace_event_counts *counts)
{
        struct tthread *thread;
        pid_t ppid;

        if (!handlers->on_fork || (ppid = ppid_of(pid)) <= 0)
                return NULL;
        for (size_t i = 0; i < set->n_targets; i++) {
                struct target *parent = set->targets[i];
                if (parent->gone || parent->pid != ppid || parent->releasing ||
                    !parent->options.follow_forks)
                        continue;
                handlers->on_fork(arg, parent, pid);
                counts->forks_followed++;
                return target_set__find(set, pid, &thread);
        }
        return NULL;
}

/* A stop from a thread we have not registered: a new thread whose first
 * stop came before its creator's clone event. */
static struct tthread *adopt_thread(struct target_set *set, pid_t tid, struct target **target,
                                    const struct ptrace_event_handlers *handlers, void *arg,
                                    struct ptrace_event_counts *counts)
{
        *target = target_set__owner_of_new_thread(set, tid);
        if (!*target)
                *target = adopt_child(set, tid, handlers, arg, counts);
        if (!*target)
                return NULL;
        return target__add_thread(*target, tid);
}

void ptrace_events__handle(struct target_set *set, pid_t tid, int status,
                           const struct ptrace_event_handlers *handlers, void *arg,
                           struct ptrace_event_counts *counts)
{
        struct tthread *thread;
        struct target *target;
        int sig, event;

        if (WIFEXITED(status) || WIFSIGNALED(status)) {
                if (handlers->on_exit_status)
                        handlers->on_exit_status(arg, tid, status);
                handle_exit(set, tid, handlers, arg, counts);
                return;
        }
        if (!WIFSTOPPED(status))
                return;
        sig = WSTOPSIG(status);
        event = (int)((unsigned)status >> 16);
        target = target_set__find(set, tid, &thread);
        if (!thread)
                thread = adopt_thread(set, tid, &target, handlers, arg, counts);
        if (!thread) {
                /* Never leave an unknown tracee stopped, never eat a signal,
                 * and let it go: nobody would ever sample it. */
                counts->threads_detached++;
                (void)ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)(event == 0 ? sig : 0));
                return;
        }
        if (event != PTRACE_EVENT_STOP && thread->interrupt_pending) {
                /* Every ptrace-stop (fork, clone, exec, signal delivery)
                 * clears the kernel's pending PTRACE_INTERRUPT trap
                 * (JOBCTL_TRAP_STOP): no PTRACE_EVENT_STOP will follow for
                 * it, and that sample is lost.  Left set, the flag would
                 * keep the thread from ever being sampled again. */
                thread->interrupt_pending = false;
                counts->interrupts_consumed++;
        }
        switch (event) {
        case PTRACE_EVENT_STOP:
                handle_event_stop(target, thread, sig, handlers, arg, counts);
                break;
        case PTRACE_EVENT_CLONE:
                handle_clone(target, tid, counts);
                break;
        case PTRACE_EVENT_FORK:
        case PTRACE_EVENT_VFORK:
                handle_fork(set, target, thread, handlers, arg, counts);
                break;
        case PTRACE_EVENT_EXEC:
                handle_exec(target, handlers, arg, counts);
                break;
        case 0:
                counts->signals_reinjected++;
                finish_stop(target, thread, sig, counts);
                break;
        default:
                finish_stop(target, thread, 0, counts);
                break;
        }
}

int ptrace_events__drain(struct target_set *set, const struct ptrace_event_handlers *handlers,
                         void *arg, struct ptrace_event_counts *counts)
{
        int handled = 0, status;
        pid_t tid;

        while ((tid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
                ptrace_events__handle(set, tid, status, handlers, arg, counts);
                handled++;
        }
        if (tid < 0 && errno == ECHILD)
                return handled ? handled : -ECHILD;
        return handled;
}
