/* tracer.c — see tracer.h.
 *
 * The loop sleeps in poll() on three descriptors: a timerfd for the next
 * tick, a signalfd for SIGCHLD (ptrace events), and the stop eventfd.  Tick
 * times are jittered by up to ±10% around a fixed grid, so that periodic
 * work in the target cannot alias with our sampling, while the average
 * rate stays exact.
 *
 * Why detach by exiting: PTRACE_DETACH needs the tracee in a ptrace-stop,
 * and stopping a thread blocked in epoll_wait makes that call fail with
 * EINTR.  When the tracer thread exits, the kernel unlinks every tracee
 * without stopping it (a group-stopped one stays stopped).
 *
 * Export: each target's samples also go to a Splunk record (otlp/
 * otlp_target.h); after every tick the records that are due are encoded
 * and handed to the exporter thread's queue, which never waits.  A target
 * that exits, and every target at the end, flushes what it has. */
#include "engine/tracer.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "attach/proc_thread.h"
#include "attach/target_check.h"
#include "engine/event_pump.h"
#include "engine/profiled_target.h"
#include "engine/run_status.h"
#include "engine/sampler.h"
#include "engine/subprocesses.h"
#include "engine/watch.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/clock.h"

static void notify_main(struct registry *registry, uint64_t value)
{
        (void)!write(registry->done_fd, &value, sizeof(value));
}

static int fail_attach(struct registry *registry, int error, int exit_code)
{
        registry->attach_error = error;
        registry->attach_exit_code = exit_code;
        return error;
}

static int attach_one(struct registry *registry, pid_t pid)
{
        struct target_options options = {
            .stack_bytes = registry->config.stack_bytes,
            .max_depth = registry->config.max_depth,
            .follow_forks = registry->config.subprocesses,
        };
        struct target *target = NULL;
        int r;

        if (target_check(pid, registry->attach_why, sizeof(registry->attach_why)) != TARGET_OK)
                return fail_attach(registry, -EINVAL, EXIT_TARGET_ERROR);
        r = target__attach(pid, &options, &target, registry->attach_why,
                           sizeof(registry->attach_why));
        if (r < 0)
                return fail_attach(registry, r, EXIT_TARGET_ERROR);
        if (target_set__add(&registry->targets, target) < 0) {
                target__free(target);
                return fail_attach(registry, -ENOMEM, 1);
        }
        log_info("attached to PID %d (%s), %zu threads", (int)pid, target->comm, target->n_threads);
        /* The launched COMMAND is set up for the program it executes, not
         * for the copy of splunk-profd that waited for us. */
        if (pid == registry->command.pid && registry->command.go_fd >= 0)
                subprocesses__start_command(registry, target);
        if (target->gone)
                return 0;
        /* dump --wait: set up right before the dump (run_loop), for the
         * program as it runs by then; at its exec stop neither libpython
         * nor the interpreter is there to be found. */
        if (pid == registry->command.pid && registry->config.first_tick_delay_s > 0)
                return 0;
        return profiled_target__prepare(registry, target);
}

/* After the tick at `tick_ns` (its samples' time, CLOCK_REALTIME): hands
 * the due Splunk records to the exporter; `force` flushes all. */
static void export_after_tick(struct registry *registry, uint64_t tick_ns, bool force)
{
        if (!registry->exporter)
                return;
        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                bool last = force || target->gone;

                profiled_target__flush(registry, target, tick_ns, last, last);
        }
}

/* `dump` shows what it can: of several processes, one that cannot be
 * profiled (a zombie, one that exited meanwhile, one another tracer
 * holds) costs a warning, not the whole dump.  Recording stays strict: a
 * profile silently missing a process the user named would mislead. */
static bool skip_failed_attach(struct registry *registry)
{
        bool several = registry->config.command == COMMAND_DUMP && registry->config.n_pids > 1;

        /* After a suspension a process may have exited meanwhile. */
        if (!(several || registry->resuming) || registry->attach_exit_code != EXIT_TARGET_ERROR)
                return false;
        log_warning("skipped: %s", registry->attach_why);
        registry->attach_error = registry->attach_exit_code = 0;
        return true;
}

/* Whether `pid` is a target already (--all-matches --subprocesses: one
 * match can be another's child). */
static bool is_target(struct registry *registry, pid_t pid)
{
        for (size_t i = 0; i < registry->targets.n_targets; i++)
                if (registry->targets.targets[i]->pid == pid && !registry->targets.targets[i]->gone)
                        return true;
        return false;
}

static int attach_all(struct registry *registry)
{
        for (size_t i = 0; i < registry->config.n_pids; i++) {
                if (is_target(registry, registry->config.pids[i]))
                        continue;
                int r = attach_one(registry, registry->config.pids[i]);
                if (r < 0 && !skip_failed_attach(registry))
                        return r;
                if (r == 0 && registry->config.subprocesses)
                        subprocesses__attach_existing(registry, registry->config.pids[i]);
                /* New threads' first stops: resume them promptly. */
                event_pump__wait(registry, 0);
        }
        if (registry->config.n_pids > 0 && registry->targets.n_targets == 0 &&
            !registry->resuming) {
                snprintf(registry->attach_why, sizeof(registry->attach_why),
                         "none of the %zu processes could be profiled", registry->config.n_pids);
                return fail_attach(registry, -ESRCH, EXIT_TARGET_ERROR);
        }
        return 0;
}

static uint64_t jittered(uint64_t interval_ns, unsigned int *seed)
{
        uint64_t spread = interval_ns / 5;

        if (spread == 0)
                return 0;
        return (uint64_t)rand_r(seed) % spread;
}

/* Arms the timer for grid point `tick` (1-based), jittered; returns when
 * it fires (CLOCK_MONOTONIC). */
static uint64_t arm_timer(int timer_fd, uint64_t start_ns, uint64_t interval_ns, uint64_t tick,
                          unsigned int *seed)
{
        uint64_t at =
            start_ns + tick * interval_ns - interval_ns / 10 + jittered(interval_ns, seed);
        struct itimerspec spec = {
            .it_value = {.tv_sec = (time_t)(at / 1000000000u), .tv_nsec = (long)(at % 1000000000u)},
        };

        timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, NULL);
        return at;
}

static bool duration_over(const struct registry *registry, uint64_t now)
{
        double limit = registry->config.duration_s;

        return limit > 0 && (double)(now - registry->start_ns) >= limit * 1e9;
}

/* --watch: discovery and upkeep between ticks; a reload may move the grid. */
static void watch_step(struct registry *registry, const struct pollfd *fds, int timer_fd,
                       uint64_t *grid_start, uint64_t *interval_ns, uint64_t *tick,
                       unsigned int *seed, uint64_t *next_tick_ns)
{
        if (!registry->watch)
                return;
        atomic_fetch_add(&registry->heartbeat, 1);
        if ((fds[4].revents & POLLIN) && watch__apply_reload(registry)) {
                *interval_ns = (uint64_t)registry->config.interval_ms * 1000000u;
                *grid_start = monotonic_ns();
                *tick = 1;
                *next_tick_ns = arm_timer(timer_fd, *grid_start, *interval_ns, *tick, seed);
        }
        watch__maintain(registry, monotonic_ns(), fds[3].revents & POLLIN, *next_tick_ns);
}

/* A run without --watch lasts while a process it was given lives: the
 * subprocesses it follows do not keep it going (a launched COMMAND's
 * exit ends it, as the shell sees it end). */
static bool keep_running(struct registry *registry)
{
        if (registry->watch)
                return true;
        if (!registry->config.subprocesses)
                return target_set__live_count(&registry->targets) > 0;
        for (size_t i = 0; i < registry->targets.n_targets; i++) {
                const struct target *target = registry->targets.targets[i];
                for (size_t p = 0; !target->gone && p < registry->config.n_pids; p++)
                        if (target->pid == registry->config.pids[p])
                                return true;
        }
        return false;
}

/* Grid points between the tick just taken (`tick`) and the next one due
 * were skipped: the tracer fell behind.  They count as asked for, with
 * the threads the last tick saw. */
static void note_missed_ticks(struct registry *registry, uint64_t tick, uint64_t due)
{
        if (due <= tick + 1)
                return;
        registry->stats.ticks_missed += due - tick - 1;
        registry->stats.thread_samples_asked += (due - tick - 1) * registry->stats.last_threads;
}

/* One line at the end of a run that could not keep up, saying by how much:
 * the profile then covers only part of the time.  A shortfall under
 * BEHIND_WARN_PERCENT, or of fewer than BEHIND_WARN_TICKS ticks (the first
 * symbolization of a process costs a few at 100 Hz), is only in the
 * summary's counts. */
#define BEHIND_WARN_PERCENT 5
#define BEHIND_WARN_TICKS   10

void tracer__warn_if_behind(const struct registry *registry)
{
        const struct run_stats *s = &registry->stats;
        uint64_t asked = s->ticks + s->ticks_missed;

        if (s->ticks_missed < BEHIND_WARN_TICKS ||
            s->ticks_missed * 100 < asked * BEHIND_WARN_PERCENT)
                return;
        log_warning("the sampler fell behind: %llu of %llu ticks taken (%.0f%%), %llu of %llu "
                    "thread-samples; raise --interval for full coverage",
                    (unsigned long long)s->ticks, (unsigned long long)asked,
                    100.0 * (double)s->ticks / (double)asked, (unsigned long long)s->samples,
                    (unsigned long long)s->thread_samples_asked);
}

/* The tick grid's origin: the start, or later by the first tick's delay
 * (dump --wait), which a resumed run keeps counting from the start. */
static uint64_t grid_origin(const struct registry *registry)
{
        return registry->start_ns + (uint64_t)(registry->config.first_tick_delay_s * 1e9);
}

static void run_loop(struct registry *registry, int timer_fd)
{
        uint64_t interval_ns = (uint64_t)registry->config.interval_ms * 1000000u, tick = 1, value;
        uint64_t grid_start = grid_origin(registry), next_tick_ns;
        unsigned int seed = (unsigned int)registry->start_ns;
        /* --watch: a new target is set up as soon as the maps reader
         * returns its maps (watch__maintain takes every reply; without
         * --watch replies wait for the tick, which takes them). */
        struct pollfd fds[6] = {
            {.fd = timer_fd, .events = POLLIN},
            {.fd = registry->sigchld_fd, .events = POLLIN},
            {.fd = registry->stop_fd, .events = POLLIN},
            {.fd = watch__fd(registry), .events = POLLIN},
            {.fd = registry->watch ? registry->reload_fd : -1, .events = POLLIN},
            {.fd = registry->watch ? maps_reader__fd(&registry->maps_reader) : -1,
             .events = POLLIN},
        };

        next_tick_ns = arm_timer(timer_fd, grid_start, interval_ns, tick, &seed);
        while (keep_running(registry)) {
                /* Wake at least every 100 ms to honour --duration. */
                uint64_t poll_ns = monotonic_ns();
                int ready = poll(fds, 6, 100);
                if (ready < 0 && errno != EINTR)
                        break;
                if (!(fds[1].revents & POLLIN))
                        event_pump__idle(registry);
                else
                        event_pump__after_sleep(registry, poll_ns);
                if (ready == 0)
                        event_pump__drain(registry);
                if (fds[2].revents & POLLIN)
                        break;
                if (fds[1].revents & POLLIN)
                        event_pump__wait(registry, 0);
                if (duration_over(registry, monotonic_ns()))
                        break;
                /* A due tick first: watch upkeep (set-up of new targets)
                 * waits for it, not the other way round. */
                if (fds[0].revents & POLLIN && read(timer_fd, &value, sizeof(value)) > 0) {
                        /* A target that executed since the last tick is set
                         * up first, or this tick would skip it: for dump's
                         * one tick of a launched COMMAND, the only one. */
                        if (!registry->watch)
                                subprocesses__prepare_pending(registry);
                        uint64_t tick_time_ns = realtime_ns();
                        sampler__tick(registry, tick_time_ns);
                        event_pump__busy(registry, "export");
                        export_after_tick(registry, tick_time_ns, false);
                        run_status__send(registry);
                        if (registry->config.max_ticks &&
                            registry->stats.ticks >= registry->config.max_ticks &&
                            (!registry->sink.complete ||
                             registry->sink.complete(registry->sink.arg)))
                                break; /* dump: one tick, more while its sink asks */
                        /* Catch up without bursts if a tick overran. */
                        uint64_t due = (monotonic_ns() - grid_start) / interval_ns + 1;
                        note_missed_ticks(registry, tick, due);
                        tick = due > tick ? due : tick + 1;
                        next_tick_ns = arm_timer(timer_fd, grid_start, interval_ns, tick, &seed);
                        /* New children's first stops, during the tick. */
                        event_pump__wait(registry, 0);
                        if (!registry->watch)
                                subprocesses__prepare_pending(registry);
                }
                watch_step(registry, fds, timer_fd, &grid_start, &interval_ns, &tick, &seed,
                           &next_tick_ns);
        }
}

static int open_sigchld_fd(void)
{
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Polling for a stop instead of sleeping on it (sampler.c) only pays when
 * the tracer and the stopping thread can run at the same time. */
static bool has_spare_cpu(void)
{
        cpu_set_t cpus;

        return sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

static void on_target_changed(void *arg, struct target *target)
{
        struct registry *registry = arg;

        if (target->gone)
                log_info("PID %d exited", (int)target->pid);
        else if (target->execed)
                log_info("PID %d executed a new program", (int)target->pid);
        if (registry->watch && !target->gone && target->execed)
                watch__on_exec(registry, target);
        else if (!target->gone && target->execed)
                profiled_target__release(registry, target); /* re-prepared for the new program */
}

static void on_fork(void *arg, struct target *parent, pid_t child)
{
        struct registry *registry = arg;

        if (registry->watch)
                watch__on_fork(registry, parent, child);
        else
                subprocesses__on_fork(registry, parent, child);
}

/* The launched COMMAND is this process's child: a traced child's exit
 * status is reaped by the tracer's waitpid, so it is kept for main. */
static void on_exit_status(void *arg, pid_t tid, int status)
{
        struct registry *registry = arg;

        if (tid != registry->command.pid || registry->command.pid <= 0)
                return;
        registry->command.exited = true;
        registry->command.status = status;
}

/* The tracer's answers to ptrace events: the sampler captures its own
 * interrupt stops; exits, execs and forks concern watch mode. */
static const struct ptrace_event_handlers event_handlers = {
    .on_interrupt_stop = sampler__on_interrupt_stop,
    .on_resumed = sampler__on_resumed,
    .on_target_changed = on_target_changed,
    .on_fork = on_fork,
    .on_exit_status = on_exit_status,
};

void *tracer__main(void *arg)
{
        struct registry *registry = arg;
        _cleanup_close_ int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

        registry->event_handlers = &event_handlers;
        if (registry->sigchld_fd >= 0)
                close(registry->sigchld_fd); /* a resumed run's second tracer */
        registry->sigchld_fd = open_sigchld_fd();
        registry->spin.allowed = has_spare_cpu();
        if (timer_fd < 0 || registry->sigchld_fd < 0) {
                snprintf(registry->attach_why, sizeof(registry->attach_why),
                         "cannot create timer or signal descriptors: %s", strerror(errno));
                fail_attach(registry, -errno, 1);
        } else if (attach_all(registry) == 0) {
                run_status__send(registry);
                notify_main(registry, 1);
                if (!registry->resuming) {
                        registry->start_ns = monotonic_ns();
                        registry->start_realtime_ns = realtime_ns();
                }
                (void)maps_reader__start(&registry->maps_reader);
                run_loop(registry, timer_fd);
                maps_reader__stop(&registry->maps_reader);
                registry->end_ns = monotonic_ns();
        }
        export_after_tick(registry, 0, true);
        /* Leave no signal unforwarded and no new thread unresumed. */
        event_pump__drain(registry);
        notify_main(registry, 2);
        return NULL;
}

void tracer__forget_targets(struct registry *registry)
{
        for (size_t i = 0; i < registry->targets.n_targets; i++)
                profiled_target__free(registry->targets.targets[i]);
        target_set__free(&registry->targets); /* leaves an empty, reusable set */
        if (registry->watch) {
                watch__free(registry->watch);
                registry->watch = watch__new();
        }
}
