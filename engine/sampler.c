/* sampler.c — one tick: stop only the threads that must be stopped, for as
 * short a time as possible, then do the slow work.
 *
 *   0. A thread of a native process the kernel samples at its CPU-time
 *      ticks (attach/perf_sampler.h) is never interrupted: the samples in
 *      its ring are unwound and recorded in phase 3 (b, first); without
 *      any since the last tick it is treated as below, but never stopped.
 *   1. For each thread, read /proc just before acting: a thread still
 *      idle since its last (blocked) sample, by its schedstat run count,
 *      reuses its last stack; otherwise /proc/.../syscall says whether it
 *      is running (interrupted at once) or blocked, and where (noted).
 *      Stops that arrive meanwhile are handled during the scan.
 *   2. Wait for the interrupted threads' stops (polling for the first
 *      few tens of µs).  Each one is captured (Python data, registers,
 *      stack copy) and resumed inside the event handler.
 *   3. Target by target, with its interrupted threads running again:
 *      a. Blocked threads are sampled without a stop: SP/PC from
 *         /proc/.../syscall, a stack copy, then a re-check that the thread
 *         is still blocked at the same point and has not run (else: one
 *         retry, then skipped).  Stack copies stop where the thread's
 *         stack ends (learnt from earlier unwinds, attach/capture.c).
 *      b. Unwind: the perf samples first (each recorded at once), then
 *         the captures.
 *   4. A blocked thread whose stack needs registers /proc does not give
 *      (frame-pointer code needs RBP, which could not be recovered from
 *      the copy) is interrupted after all, but only when its syscall
 *      restarts transparently.
 *   5. Symbolize and record.
 * Capture buffers: a thread whose stack will be reused (idle) gives its
 * buffers back (capture__trim) as soon as it is unwound, and gets them
 * again just before its next capture (capture__ready, outside the stop
 * window); a thread captured every tick keeps them, so busy threads cost
 * no allocation per tick. */
#include "engine/sampler.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "otlp/otlp_target.h"
#include "pprof/profile_builder.h"
#include "attach/syscall_restart.h"
#include "engine/event_pump.h"
#include "engine/profiled_target.h"
#include "python/py_process.h"
#include "symbolize/symbolizer.h"
#include "unwind/native_unwinder.h"
#include "util/log.h"

#define STOP_WAIT_NS        (200ull * 1000 * 1000)
#define MAPS_CHECK_NS       (1000ull * 1000 * 1000)
#define MAPS_REFRESH_MAX_NS (10ull * 1000 * 1000 * 1000)
#define NAME_REFRESH_TICKS  16
#define STACK_GROWTH_LIMIT  4
/* A stop takes 10-20 µs to arrive: look for stops no more often than this
 * while scanning the remaining threads. */
#define COLLECT_EVERY_NS  (5ull * 1000)
#define EVENTS_EVERY_NS   (1000ull * 1000)
#define SPIN_FOR_STOPS_NS (60ull * 1000)
#define SPIN_BACKOFF_MAX  64 /* ticks */
/* An interrupted thread whose run-queue wait (schedstat run_delay) grew by
 * more than this between the read before the interrupt and the one after
 * the resume had to wait for a CPU to reach its stop: its sample is
 * `runnable`.  A thread on a CPU reaches its stop without waiting.  The
 * wait that ended at its arrival may have begun before the tick (it was
 * runnable) or after it (something, often the tracer's own wake-up,
 * preempted it): both are `runnable`, which drops the second kind, a
 * loss without bias, where subtracting the time since the tick (tried)
 * let recently woken threads count as running, at their syscall's exit
 * (README, "Running, runnable, blocked", for the measurements). */
#define RUNNABLE_WAIT_NS (20ull * 1000)
/* A runnable thread whose wait began at most this long before the tick
 * was on a CPU at the tick (displaced_since_tick). */
#define DISPLACED_SLACK_NS (50ull * 1000)
/* schedstat's on-CPU time of a thread that stays on its CPU moves only at
 * scheduler ticks (1-10 ms): an unchanged value means "has not run" only
 * once this much time has passed. */
#define NOT_RUN_MIN_NS (10ull * 1000 * 1000)

enum sample_state {
        SAMPLE_RUNNING,  /* on a CPU */
        SAMPLE_RUNNABLE, /* ready, waiting for a CPU */
        SAMPLE_BLOCKED,  /* in a syscall or asleep */
};

static const char *const sample_state_names[] = {
    [SAMPLE_RUNNING] = "running",
    [SAMPLE_RUNNABLE] = "runnable",
    [SAMPLE_BLOCKED] = "blocked",
};

/* Only while the tick waits for its stops (registry->taking_stops) is an
 * interrupt stop captured.  One that arrives later (after wait_for_stops
 * gave up on it, at an event drain during unwinding or between ticks) only
 * resumes the thread: its capture would not be unwound. */
void sampler__on_interrupt_stop(void *arg, struct target *target, struct tthread *thread)
{
        struct registry *registry = arg;
        struct profiled_target *profiled = target->owner;
        struct py_process *python = profiled ? profiled->python : NULL;
        bool python_copied = false;

        if (!registry->taking_stops) {
                thread->captured = false;
                return;
        }
        /* Python frame data in the same stop window (one or two reads),
         * before the registers when it can do without them: the
         * registers' ptrace request first waits for the thread to leave
         * its CPU, and the copy fills that wait (~6 µs less pause with a
         * 100-frame stack, measured). */
        capture__begin_stopped(&thread->capture, target->mem_pid, thread->tid);
        if (python)
                python_copied = py_process__capture(python, &thread->capture, false);
        thread->captured = capture__copy_registers_and_stack(&thread->capture) == 0;
        if (thread->captured && python && !python_copied)
                (void)py_process__capture(python, &thread->capture, true);
        if (thread->captured && python)
                py_process__capture_frames(python, &thread->capture);
        if (thread->captured && profiled)
                context_reader__capture(&profiled->context, thread); /* one read, <= 512 B */
}

/* Right after the resume, as close to it as possible: the run-queue wait
 * the thread adds from now on is accounted only when it next arrives on a
 * CPU, so this read's run_delay is the wait before the stop arrived. */
void sampler__on_resumed(void *arg, struct target *target, struct tthread *thread)
{
        (void)arg;
        (void)target;
        if (thread->captured)
                thread->sched_resumed_valid =
                    proc_thread__schedstat(&thread->files, &thread->sched_resumed);
}

/* Phase 1, first step: a thread whose last sample was taken while it was
 * blocked, and that has not been on a CPU since, is still there: its last
 * stack is reused.  Reads schedstat (this tick's sched_before) once. */
static bool still_idle(struct tthread *thread)
{
        const struct proc_schedstat *now = &thread->sched_before;
        uint64_t key;

        if (!thread->idle_key_valid || !thread->last_stack_valid)
                return false;
        if (thread->sched_before_valid)
                return now->on_cpu_ns + now->arrivals == thread->idle_run_count;
        return proc_thread__sched_key(&thread->files, &key) && key == thread->idle_run_count;
}

/* Phase 1, second step: a thread last sampled by a stop that has not
 * arrived on a CPU since (same on-CPU time and arrival count as right after
 * that resume, long enough ago for a tick to have moved them) and is
 * runnable: it is still waiting for a CPU where it was.  Its last stack is
 * reused, without a stop, as `runnable`. */
static bool waiting_since_stop(struct tthread *thread, uint64_t now_ns)
{
        const struct proc_schedstat *now = &thread->sched_before, *seen = &thread->sched_seen;

        return thread->sched_seen_stopped && thread->last_stack_valid &&
               thread->sched_before_valid && thread->sched_seen_ns &&
               now_ns - thread->sched_seen_ns >= NOT_RUN_MIN_NS &&
               now->on_cpu_ns == seen->on_cpu_ns && now->arrivals == seen->arrivals &&
               proc_thread__state(&thread->files) == 'R';
}

/* This tick's schedstat of a thread, before anything is done to it; the
 * first one is where its CPU time starts being charged. */
static void read_sched_before(struct tthread *thread)
{
        thread->sched_resumed_valid = false;
        thread->sched_before_valid = proc_thread__schedstat(&thread->files, &thread->sched_before);
        if (thread->sched_before_valid && !thread->cpu_charged_valid) {
                thread->cpu_charged_ns = thread->sched_before.on_cpu_ns;
                thread->cpu_charged_valid = true;
        }
}

/* The copy buffers of a thread whose stack will be reused go back to the
 * allocator until it runs again (capture__ready). */
static void give_back_buffers(struct registry *registry, struct tthread *thread)
{
        registry->stats.capture_bytes_freed += capture__trim(&thread->capture);
}

/* An idle thread: its last stack is recorded again. */
static void reuse_last_stack(struct registry *registry, struct tthread *thread,
                             enum sample_state state)
{
        thread->reuse_last_stack = true;
        thread->sample_state = (uint8_t)state;
        give_back_buffers(registry, thread);
}

/* The stops that have arrived, without waiting; returns how many of the
 * `outstanding` interrupts may still be unanswered (an estimate: other
 * events count as answers too, which only ends the collecting early). */
static size_t collect_stops(struct registry *registry, size_t outstanding)
{
        int handled = event_pump__collect(registry);

        if (handled <= 0)
                return outstanding;
        return (size_t)handled < outstanding ? outstanding - (size_t)handled : 0;
}

/* A leader that called pthread_exit looks blocked outside any call
 * ("-1" in /proc/.../syscall, as a zombie does); from then on the
 * process is read through a live thread, at once rather than at the
 * next maps check. */
static bool leader_just_exited(struct target *target, struct tthread *thread)
{
        if (thread->tid != target->pid || thread->blocked_at.syscall_nr >= 0 ||
            !target__follow_leader_exit(target))
                return false;
        profiled_target__follow_memory_pid(target);
        return true;
}

/* Before a capture: a thread new since the last tick gets room for the
 * Python state its stop window may find (py_process__reserve). */
static void reserve_python(struct target *target, struct tthread *thread)
{
        struct profiled_target *profiled = target->owner;

        if (profiled && profiled->python)
                py_process__reserve(profiled->python, thread);
}

/* Whether the kernel samples this thread on its CPU (attach/perf_sampler.h)
 * this tick.  Not in a process that publishes span context: a sample's span
 * slot or OTEP 4947 record must be copied in the same instant as its stack,
 * and the kernel copies only the stack (read at the drain, up to a tick
 * later, 5 samples of tests/test_otel_context.py's work outside any span
 * carried the span that began after it).  Such a thread is stopped as
 * before, and what its ring held meanwhile is dropped. */
static bool uses_perf(struct target *target, struct tthread *thread)
{
        struct profiled_target *profiled = target->owner;

        if (thread->perf.fd < 0)
                return false;
        if (!context_reader__publishes_spans(&profiled->context))
                return true;
        perf_sampler__discard(&thread->perf);
        return false;
}

/* A perf-sampled thread that /proc calls running: whether, since the last
 * tick, it spent more time waiting for a CPU than on one (schedstat), so
 * that its sample is labelled `runnable`.  Remembers this tick's reading. */
static bool waited_more_than_ran(struct tthread *thread)
{
        const struct proc_schedstat *now = &thread->sched_before, *seen = &thread->sched_seen;
        bool waited = thread->sched_before_valid && thread->sched_seen_ns &&
                      now->run_delay_ns - seen->run_delay_ns > now->on_cpu_ns - seen->on_cpu_ns;

        if (thread->sched_before_valid) {
                thread->sched_seen = *now;
                thread->sched_seen_ns = monotonic_ns();
        }
        return waited;
}

/* Phase 1 for a thread the kernel samples: it is never interrupted.  The
 * samples in its ring are taken in phase 3.  Without any it has used less
 * than a period of CPU since its last one: a blocked thread is sampled from
 * /proc as any other, an idle one reuses its last stack, and one that is
 * running or waiting for a CPU reuses its last stack with no CPU time (its
 * next perf sample carries it), `runnable` when it waited more than it
 * ran.  Returns whether it is the kernel's. */
static bool plan_perf_thread(struct registry *registry, struct target *target,
                             struct tthread *thread)
{
        thread->perf_tick = uses_perf(target, thread);
        thread->perf_due = false;
        if (!thread->perf_tick)
                return false;
        thread->cpu_charged_valid = false; /* CPU is the samples' periods */
        thread->sched_seen_stopped = false;
        bool waited = waited_more_than_ran(thread);
        if ((thread->perf_due = perf_sampler__pending(&thread->perf)))
                return true;
        if (still_idle(thread)) {
                reuse_last_stack(registry, thread, SAMPLE_BLOCKED);
                return true;
        }
        switch (proc_thread__syscall(&thread->files, &thread->blocked_at)) {
        case PROC_SYSCALL_RUNNING:
                /* Not reuse_last_stack(): its buffers are kept for the next sample. */
                thread->reuse_last_stack = thread->last_stack_valid;
                thread->sample_state = waited ? SAMPLE_RUNNABLE : SAMPLE_RUNNING;
                registry->stats.skipped += !thread->last_stack_valid;
                break;
        case PROC_SYSCALL_BLOCKED:
                thread->blocked_candidate = !leader_just_exited(target, thread);
                break;
        case PROC_SYSCALL_GONE:
                break;
        }
        return true;
}

/* Phase 1.  /proc/.../syscall tells both whether a thread is running and,
 * if not, where it is blocked (one read instead of stat, then syscall).
 * While interrupted threads' stops may be outstanding, each step also
 * collects the stops that arrived, so that a thread interrupted early in
 * a long list is resumed without waiting for the rest of the scan. */
static size_t interrupt_running_threads(struct registry *registry)
{
        size_t pending = 0, outstanding = 0;
        uint64_t collected_ns = 0;

        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                if (target->releasing || !target->owner)
                        continue; /* not sampled (engine/watch.c) */
                for (size_t i = 0; !target->gone && i < target->n_threads; i++) {
                        if (outstanding > 0 && monotonic_ns() - collected_ns >= COLLECT_EVERY_NS) {
                                outstanding = collect_stops(registry, outstanding);
                                collected_ns = monotonic_ns();
                        }
                        /* An event may have ended or released the target. */
                        if (target->gone || target->releasing || !target->owner ||
                            i >= target->n_threads)
                                break;
                        struct tthread *thread = target->threads[i];
                        thread->captured = thread->blocked_candidate = false;
                        thread->reuse_last_stack = thread->perf_tick = thread->perf_due = false;
                        if (thread->group_stopped || thread->interrupt_pending || thread->exited)
                                continue;
                        read_sched_before(thread);
                        if (plan_perf_thread(registry, target, thread))
                                continue;
                        if (still_idle(thread)) {
                                reuse_last_stack(registry, thread, SAMPLE_BLOCKED);
                                continue;
                        }
                        if (waiting_since_stop(thread, monotonic_ns())) {
                                reuse_last_stack(registry, thread, SAMPLE_RUNNABLE);
                                continue;
                        }
                        switch (proc_thread__syscall(&thread->files, &thread->blocked_at)) {
                        case PROC_SYSCALL_RUNNING:
                                reserve_python(target, thread);
                                (void)capture__ready(&thread->capture);
                                capture__warm_up(&thread->capture);
                                if (ptrace_events__interrupt(thread) == 0) {
                                        /* After the interrupt, not before: the read
                                         * would widen the window in which a thread
                                         * judged running enters a blocking call and
                                         * gets EINTR.  One off its CPU, the case the
                                         * read is for, stays as it is until it runs. */
                                        thread->kernel_wait_before = proc_thread__kernel_wait(
                                            &thread->files, target->pid, thread->tid);
                                        pending++;
                                        outstanding++;
                                        collected_ns = thread->interrupt_ns;
                                } else {
                                        registry->stats.skipped++;
                                }
                                break;
                        case PROC_SYSCALL_BLOCKED:
                                if (leader_just_exited(target, thread))
                                        break;
                                thread->blocked_candidate = true;
                                break;
                        case PROC_SYSCALL_GONE:
                                break;
                        }
                }
        }
        return pending;
}

/* Interrupts sent since `since_ns` whose stop has not arrived.  Older
 * ones (a thread stuck in uninterruptible sleep past an earlier tick's
 * wait) are not waited for again: each tick would otherwise spend its
 * whole STOP_WAIT_NS on them. */
static size_t count_pending(const struct registry *registry, uint64_t since_ns)
{
        size_t pending = 0;

        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                const struct target *target = registry->targets.targets[t];
                for (size_t i = 0; !target->gone && i < target->n_threads; i++) {
                        const struct tthread *thread = target->threads[i];
                        pending += thread->interrupt_pending && thread->interrupt_ns >= since_ns;
                }
        }
        return pending;
}

/* Phase 2.  A stop arrives 5-20 µs after its interrupt.  A tracer that
 * sleeps for it adds its own wake-up to the thread's pause (10-20 µs more
 * on a quiet VM, measured): with a CPU to spare, it polls waitpid for the
 * first SPIN_FOR_STOPS_NS, and sleeps only for stops that are late.
 * waitpid, not the signalfd: it reports the stop a few µs sooner.
 * On a busy host polling backfires (p50 46 -> 111 µs with two CPU hogs on
 * 2 vCPUs, measured): the poller takes the CPU the interrupted thread
 * needs to reach its stop.  So a poll that ends with stops still missing
 * turns polling off for the next 1, 2, 4 ... SPIN_BACKOFF_MAX ticks. */
static bool may_spin(struct registry *registry)
{
        struct spin_policy *spin = &registry->spin;

        if (!spin->allowed)
                return false;
        if (spin->skip > 0) {
                spin->skip--;
                return false;
        }
        return true;
}

static void spin_outcome(struct registry *registry, bool all_arrived)
{
        struct spin_policy *spin = &registry->spin;

        if (all_arrived) {
                spin->backoff = 0;
                return;
        }
        spin->backoff = spin->backoff ? spin->backoff * 2 : 1;
        if (spin->backoff > SPIN_BACKOFF_MAX)
                spin->backoff = SPIN_BACKOFF_MAX;
        spin->skip = spin->backoff;
}

static void wait_for_stops(struct registry *registry, size_t pending, uint64_t since_ns)
{
        uint64_t start = monotonic_ns(), deadline = start + STOP_WAIT_NS;
        bool spinning = pending && may_spin(registry);

        event_pump__wait(registry, 0);
        while (pending && (pending = count_pending(registry, since_ns)) > 0) {
                uint64_t now = monotonic_ns();
                if (spinning && now < start + SPIN_FOR_STOPS_NS) {
                        event_pump__drain(registry);
                        continue;
                }
                if (spinning) {
                        spin_outcome(registry, false);
                        spinning = false;
                }
                if (now >= deadline) {
                        /* Stuck in uninterruptible sleep: it is resumed
                         * when its stop finally arrives. */
                        registry->stats.skipped += pending;
                        break;
                }
                event_pump__wait(registry, deadline - now);
        }
        if (spinning)
                spin_outcome(registry, true);
        registry->taking_stops = false;
}

static bool same_point(const struct blocked_point *a, const struct blocked_point *b)
{
        return a->syscall_nr == b->syscall_nr && a->sp == b->sp && a->pc == b->pc;
}

/* Phase 3a, for one thread.  `before` is where phase 1 saw it blocked; the
 * copy is kept only if the thread is still blocked there afterwards and
 * has not run since its run count was read (after `before`).  A thread
 * that ran meanwhile is tried once more, where it is blocked now. */
static void sample_blocked(struct registry *registry, struct target *target, struct tthread *thread)
{
        struct profiled_target *profiled = target->owner;
        struct blocked_point before = thread->blocked_at, after;
        uint64_t runs_before, runs_after;

        if (!proc_thread__run_count(&thread->files, target->pid, thread->tid, &runs_before))
                goto skipped;
        if (thread->idle_key_valid && thread->last_stack_valid &&
            same_point(&before, &thread->idle_point) && runs_before == thread->idle_run_count) {
                reuse_last_stack(registry, thread, SAMPLE_BLOCKED);
                return;
        }
        reserve_python(target, thread);
        (void)capture__ready(&thread->capture);
        for (int attempt = 0; attempt < 2; attempt++) {
                if (capture__from_blocked(&thread->capture, target->mem_pid, thread->tid, &before) <
                    0)
                        break;
                if (profiled && profiled->python) {
                        (void)py_process__capture(profiled->python, &thread->capture, true);
                        py_process__capture_frames(profiled->python, &thread->capture);
                }
                if (profiled)
                        context_reader__capture(&profiled->context, thread); /* blocked: stable */
                if (proc_thread__syscall(&thread->files, &after) != PROC_SYSCALL_BLOCKED ||
                    !proc_thread__run_count(&thread->files, target->pid, thread->tid, &runs_after))
                        break;
                if (same_point(&before, &after) && runs_after == runs_before) {
                        thread->captured = true;
                        thread->idle_point = before;
                        thread->idle_run_count = runs_before;
                        return;
                }
                before = after;
                runs_before = runs_after;
        }
skipped:
        registry->stats.skipped++;
}

/* Whether the maps are worth re-reading, asked at most once per
 * MAPS_CHECK_NS.  The maps text of a Python process is ~10 KB for the
 * kernel to format, where vsize is one pread: the maps are re-read when
 * vsize moved, and every MAPS_REFRESH_MAX_NS anyway, for a mapping
 * replaced by one of the same size.  An unreadable vsize (0) counts as
 * moved. */
static bool maps_may_have_changed(struct target *target, struct profiled_target *profiled,
                                  uint64_t now)
{
        uint64_t vsize;

        if (now - profiled->last_check_ns < MAPS_CHECK_NS)
                return false;
        profiled->last_check_ns = now;
        /* Backstop for leader_just_exited, should a zombie's syscall file
         * not read "-1": once a second, not per tick. */
        if (target__follow_leader_exit(target))
                profiled_target__follow_memory_pid(target);
        struct tthread *reader = target__find_thread(target, target->mem_pid);
        vsize = reader ? proc_thread__vsize(&reader->files) : 0;
        if (vsize != 0 && vsize == profiled->last_vsize &&
            now - profiled->last_refresh_ns < MAPS_REFRESH_MAX_NS)
                return false;
        profiled->last_vsize = vsize;
        return true;
}

/* The address space first: the context reader scans the maps for its
 * segment only when they changed. */
static void refresh_address_space(struct registry *registry, struct target *target)
{
        struct profiled_target *profiled = target->owner;
        uint64_t now = monotonic_ns();
        bool execed = target->execed;

        /* The maps reader reads the text (a starting process's mmap lock can
         * hold a read for tens of ms); it is applied at a later tick. */
        if (profiled->space && (execed || (!profiled_target__maps_awaited(profiled, now) &&
                                           maps_may_have_changed(target, profiled, now)))) {
                target->execed = false;
                profiled->last_refresh_ns = now;
                profiled_target__ask_maps(registry, target, now);
        }
        size_t maps_len = 0;
        const char *maps_text =
            profiled->space ? address_space__maps_text(profiled->space, &maps_len) : NULL;
        event_pump__busy(registry, "tick: context refresh");
        if (context_reader__refresh(&profiled->context, target, now, execed,
                                    profiled_target__maps_generation(profiled), maps_text,
                                    maps_len) &&
            profiled->otlp) /* the SDK published a new process context */
                otlp_target__update_resource(profiled->otlp, &profiled->context.process);
}

/* A stack that did not fit its copy gets a bigger buffer for the next
 * sample (threads with large frames, e.g. select()'s fd arrays), up to
 * STACK_GROWTH_LIMIT times --stack-bytes.  Done after the resume.  Returns
 * whether it grew. */
static bool grow_stack_copy(struct target *target, struct tthread *thread)
{
        struct capture *capture = &thread->capture;
        size_t limit = target->options.stack_bytes * STACK_GROWTH_LIMIT;

        if (thread->last_stack.end != UNWIND_OUT_OF_COPY ||
            capture->stack_len < capture->stack_capacity || capture->stack_capacity >= limit)
                return false;
        return capture__grow_stack(capture, capture->stack_capacity * 2 < limit
                                                ? capture->stack_capacity * 2
                                                : limit) == 0;
}

/* Where the thread's stack ends, for shorter copies (capture.h): learnt
 * from a complete walk, forgotten when a copy cut there was too short.
 * Returns whether the next copy will be longer (it was forgotten). */
static bool learn_stack_end(struct tthread *thread)
{
        struct capture *capture = &thread->capture;
        const struct thread_stack *stack = &thread->last_stack;

        if (stack->end == UNWIND_COMPLETE && !stack->truncated) {
                capture__learn_stack_end(capture, stack->read_end);
                return false;
        }
        if (stack->end == UNWIND_OUT_OF_COPY && capture->stack_cut_at_hint) {
                capture__forget_stack_end(capture);
                return true;
        }
        return false;
}

static void unwind_capture(struct registry *registry, struct target *target, struct tthread *thread)
{
        struct profiled_target *profiled = target->owner;
        struct thread_stack *stack = &thread->last_stack;
        bool merge_failed = false, longer_copy = false;

        stack->n_pcs = 0;
        stack->truncated = true;
        if (profiled->unwinder) {
                native_unwinder__unwind(profiled->unwinder, &thread->capture, stack,
                                        target->options.max_depth);
                longer_copy = learn_stack_end(thread);
        }
        if (stack->n_pcs == 0) {
                /* At least the leaf: a partial frame beats a lost sample. */
                stack->pcs[0] = thread->capture.regs.rip;
                if (stack->sps)
                        stack->sps[0] = thread->capture.regs.rsp;
                stack->n_pcs = 1;
                stack->truncated = true;
        }
        if (profiled->python)
                py_process__prepare(profiled->python, target, thread);
        if (profiled->python &&
            !py_process__merge(profiled->python, profiled->space, &thread->capture, stack,
                               (enum native_mode)registry->config.native_mode, &merge_failed))
                registry->stats.errors++;
        registry->stats.merge_failed += merge_failed;
        bool grown = grow_stack_copy(target, thread) || longer_copy;
        /* Taken before its Python frames could be read: read it again. */
        thread->last_stack_valid =
            !profiled->python || py_process__sample_reusable(profiled->python, &thread->capture);
        /* A stop, if the call restarts unseen: for the registers the walk
         * lacked, or once for the fs_base that locates its OTEP 4947 record
         * (a thread blocked since before the attach never stopped, when
         * glibc's thread lists did not give it: context_reader.c). */
        thread->needs_stop = thread->capture.kind == CAPTURE_BLOCKED &&
                             (stack->end == UNWIND_NEEDS_REGISTERS ||
                              context_reader__needs_fs_base(&profiled->context, thread)) &&
                             syscall_restart__is_transparent(thread->capture.blocked.syscall_nr);
        /* An idle thread reuses this stack, unless a bigger copy could
         * complete it next time, or a stop is to complete it: the re-stop
         * sets the key when it lands (keep_idle_key), and one that did not
         * arrive in time is tried again next tick instead of leaving the
         * partial stack in place for as long as the thread sleeps. */
        thread->idle_key_valid = thread->capture.kind == CAPTURE_BLOCKED && !grown &&
                                 thread->last_stack_valid && !thread->needs_stop;
}

/* Hands one recorded sample to the dump/top sink (sample_sink.h). */
static void emit_sample(struct registry *registry, struct target *target,
                        const struct tthread *thread, const struct sample_record *record)
{
        struct profiled_target *profiled = target->owner;
        bool blocked = strcmp(record->thread_state, "blocked") == 0;
        struct sample_event event = {
            .record = record,
            .space = profiled->space,
            .target = target,
            .thread = thread,
            .syscall_nr = !blocked ? -1
                          : thread->capture.kind == CAPTURE_BLOCKED
                              ? thread->capture.blocked.syscall_nr
                              : (long)thread->capture.regs.orig_rax, /* re-stopped in the call */
        };

        registry->sink.on_sample(registry->sink.arg, &event);
}

/* The state of a thread's sample this tick.  An interrupted thread is
 * `runnable` when its run-queue wait grew by more than RUNNABLE_WAIT_NS
 * between the read before the interrupt and the one after the resume,
 * else `running`. */
static enum sample_state classify(const struct tthread *thread, bool stopped)
{
        if (thread->captured && thread->capture.kind == CAPTURE_PERF)
                return SAMPLE_RUNNING; /* the kernel took it on its CPU */
        if (thread->reuse_last_stack && !thread->captured)
                return (enum sample_state)thread->sample_state;
        if (!stopped || thread->needs_stop)
                return SAMPLE_BLOCKED;
        if (!thread->sched_before_valid || !thread->sched_resumed_valid)
                return SAMPLE_RUNNING; /* no schedstat: /proc's "running" */
        return thread->sched_resumed.run_delay_ns - thread->sched_before.run_delay_ns >
                       RUNNABLE_WAIT_NS
                   ? SAMPLE_RUNNABLE
                   : SAMPLE_RUNNING;
}

/* From the interrupt to its stop being reported: the thread reaching its
 * stop, mostly its own wait for a CPU. */
static uint64_t interrupt_to_stop_ns(const struct tthread *thread)
{
        return thread->stop_seen_ns > thread->interrupt_ns
                   ? thread->stop_seen_ns - thread->interrupt_ns
                   : 0;
}

/* Whether a runnable thread was still on a CPU at the tick, taken off it
 * only since (by the tracer's own wake-up, which the kernel defers to the
 * end of a system call, or by chance): its run-queue wait that ended at
 * its stop began no earlier than DISPLACED_SLACK_NS before the tick.  One
 * that had been waiting since before the tick shows where something else
 * preempted it, and that is biased: a write() that wakes the peer it
 * writes to is preempted by that peer as it returns, so such samples put
 * 78% of redis's CPU in write() where perf puts 48%
 * (bench/accuracy_loaded.py). */
static bool displaced_since_tick(const struct tthread *thread, uint64_t tick_ns)
{
        uint64_t growth = thread->sched_resumed.run_delay_ns - thread->sched_before.run_delay_ns;
        uint64_t reach = interrupt_to_stop_ns(thread);
        uint64_t before_interrupt = growth > reach ? growth - reach : 0;
        uint64_t since_tick = thread->interrupt_ns > tick_ns ? thread->interrupt_ns - tick_ns : 0;

        return before_interrupt <= since_tick + DISPLACED_SLACK_NS;
}

/* Whether a sample is charged CPU: where the thread was executing at the
 * tick, so that the charged samples fall on each function in proportion to
 * its CPU time, as perf's do.
 * - `running`: it was on a CPU; but not when its call failed with EINTR,
 *   which our interrupt caused as the thread went to sleep in it (repaired
 *   before it returns): undisturbed, that sample would have been blocked.
 * - `runnable`, stopped by us: only when displaced_since_tick(), and then
 *   outside any system call (a thread can only sleep inside one, so it was
 *   preempted there) or at a call's exit when its kernel stack, read right
 *   after the interrupt, shows a preemption, not a sleep it was woken from
 *   (charging those would charge CPU to every epoll_wait a busy host makes
 *   a thread wait after).  Without that stack (no CAP_SYS_ADMIN), a call's
 *   exit is not charged.
 * What is not charged accrues to the thread's next charged sample. */
static bool takes_cpu(const struct tthread *thread, enum sample_state state, uint64_t tick_ns)
{
        bool stopped = thread->captured && thread->capture.kind == CAPTURE_STOPPED;
        bool in_call = stopped && (long)thread->capture.regs.orig_rax >= 0;

        if (in_call && (long)thread->capture.regs.rax == -EINTR)
                return false;
        if (state == SAMPLE_RUNNING)
                return true;
        if (state != SAMPLE_RUNNABLE || !stopped || !thread->sched_before_valid ||
            !thread->sched_resumed_valid || !displaced_since_tick(thread, tick_ns))
                return false;
        return !in_call || thread->kernel_wait_before == KERNEL_WAIT_PREEMPTED;
}

/* The values of a thread the kernel samples: a perf sample's cpu is its
 * period (CPU time the kernel counted while the thread ran, run-queue time
 * never), the thread's other samples carry none.  wall: the time since its
 * previous sample, up to the perf sample's own time. */
static void perf_values(struct registry *registry, struct tthread *thread, uint64_t tick_ns,
                        struct sample_record *record)
{
        bool perf = thread->captured && thread->capture.kind == CAPTURE_PERF;
        uint64_t at = perf ? thread->perf_time_ns : tick_ns;

        record->cpu_ns = perf ? (int64_t)thread->perf_period_ns : 0;
        if (!thread->last_sample_ns)
                record->wall_ns = (int64_t)registry->config.interval_ms * 1000000;
        else
                record->wall_ns =
                    at > thread->last_sample_ns ? (int64_t)(at - thread->last_sample_ns) : 0;
        if (at > thread->last_sample_ns)
                thread->last_sample_ns = at;
}

/* The sample's values.  cpu: the thread's on-CPU time (the kernel's
 * accounting) not yet charged, charged only where takes_cpu() says, so
 * that run-queue and blocked time never is: it accrues to the thread's
 * next such sample; without schedstat, the wall time since its last
 * sample for a running one.  wall: the time since its last sample. */
static void sample_values(struct registry *registry, struct tthread *thread,
                          enum sample_state state, uint64_t tick_ns, struct sample_record *record)
{
        if (thread->perf_tick) {
                perf_values(registry, thread, tick_ns, record);
                return;
        }
        const struct proc_schedstat *now =
            thread->sched_resumed_valid ? &thread->sched_resumed : &thread->sched_before;
        bool known = thread->sched_resumed_valid || thread->sched_before_valid;
        uint64_t wall = thread->last_sample_ns && tick_ns > thread->last_sample_ns
                            ? tick_ns - thread->last_sample_ns
                            : (uint64_t)registry->config.interval_ms * 1000000u;

        record->wall_ns = (int64_t)wall;
        record->cpu_ns = 0;
        if (takes_cpu(thread, state, tick_ns) && known && thread->cpu_charged_valid) {
                if (now->on_cpu_ns > thread->cpu_charged_ns)
                        record->cpu_ns = (int64_t)(now->on_cpu_ns - thread->cpu_charged_ns);
                thread->cpu_charged_ns = now->on_cpu_ns;
        } else if (state == SAMPLE_RUNNING && !known) {
                record->cpu_ns = (int64_t)wall;
        }
        thread->last_sample_ns = tick_ns;
        if (thread->reuse_last_stack && !thread->captured)
                return; /* still waiting where it was: keep the old reference */
        thread->sched_seen_stopped = state != SAMPLE_BLOCKED && known;
        thread->sched_seen = *now;
        thread->sched_seen_ns = monotonic_ns();
}

/* The pause of an interrupted thread, in two: waited for the stop
 * (interrupt to the stop being reported: mostly the thread's run-queue
 * wait) and held by us (report to resume). */
static void add_pause(struct run_stats *stats, const struct tthread *thread)
{
        uint64_t waited = interrupt_to_stop_ns(thread);

        run_stats__add_pause(stats, thread->last_pause_ns,
                             thread->last_pause_ns > waited ? thread->last_pause_ns - waited : 0,
                             waited);
}

static void record_thread(struct registry *registry, struct target *target, struct tthread *thread,
                          uint64_t tick_realtime_ns, uint64_t tick_ns)
{
        struct profiled_target *profiled = target->owner;
        bool stopped = thread->captured && thread->capture.kind == CAPTURE_STOPPED;
        bool perf = thread->captured && thread->capture.kind == CAPTURE_PERF;
        const struct merged_stack *merged = thread->capture.interp.result;
        enum sample_state state = classify(thread, stopped);
        struct sample_record record = {
            .pid = target->pid,
            .tid = thread->tid,
            .thread_name = thread->name,
            .thread_state = sample_state_names[state],
            .time_ns = tick_realtime_ns, /* a perf sample too: the Splunk snapshot's instant */
            .stack = &thread->last_stack,
            .thread_id = thread->tid, /* native: no runtime id beyond the tid */
            .merged = merged,
        };

        if (merged && merged->has_thread_ident)
                record.thread_id = (int64_t)merged->thread_ident; /* threading.get_ident() */
        struct py_labels labels = {0};
        if (profiled->python) { /* thread.gil, and threading's thread.name */
                py_process__label(profiled->python, &thread->capture, &labels);
                record.gil = labels.gil;
                record.python_thread_name = labels.thread_name;
                record.asyncio_task = labels.asyncio_task;
        }
        struct context_span span;
        if (context_reader__decode(&profiled->context, thread, &span) == CONTEXT_SPAN) {
                record.trace_id = span.trace_id;
                record.span_id = span.span_id;
                record.span_attributes = &span.record;
        }
        if (labels.task_span) { /* the running asyncio task's own span */
                record.trace_id = labels.trace_id;
                record.span_id = labels.span_id;
                record.span_attributes = NULL;
        }
        if (span.internal && !registry->include_internal_stacks)
                return; /* the telemetry SDK's own thread */
        sample_values(registry, thread, state, tick_ns, &record);

        if (registry->stats.ticks % NAME_REFRESH_TICKS == 1)
                (void)proc_thread__comm(&thread->files, thread->name);
        if (registry->builder && sample_recorder__record(&registry->recorder, profiled->space,
                                                         &profiled->locations, &record) < 0) {
                registry->stats.errors++;
                return;
        }
        if (registry->sink.on_sample)
                emit_sample(registry, target, thread, &record);
        if (profiled->otlp)
                (void)otlp_target__record(profiled->otlp, profiled->space, &record);
        registry->stats.samples++;
        registry->stats.samples_runnable += state == SAMPLE_RUNNABLE;
        registry->stats.samples_running += state == SAMPLE_RUNNING;
        registry->stats.cpu_charged_ns += (uint64_t)record.cpu_ns;
        if (stopped) {
                registry->stats.samples_stopped++;
                add_pause(&registry->stats, thread);
        } else if (perf) {
                registry->stats.samples_perf++; /* no pause: nothing was stopped */
        } else if (thread->captured) {
                registry->stats.samples_blocked++;
        } else {
                registry->stats.samples_reused++;
        }
}

/* Between the targets of a long tick (unwinding and first symbolization
 * can take a while): new children's first stops are not kept waiting
 * longer than this, and a short tick costs no check per target. */
static void handle_events_if_due(struct registry *registry, uint64_t *checked_ns)
{
        uint64_t now = monotonic_ns();

        if (now - *checked_ns < EVENTS_EVERY_NS)
                return;
        *checked_ns = now;
        event_pump__wait(registry, 0);
}

/* Phase 3 for one target: its blocked threads are copied, then
 * every capture of it is unwound, and a blocked thread whose stack will
 * likely be reused next tick gives its copy back at once.  One target at a
 * time, so that the copies alive together are one process's: a first tick
 * over 50 idle processes × 10 threads would otherwise hold 500 × 32 KiB
 * of stack copies before the first unwind.  Returns how many blocked
 * threads need a stop to be unwound. */
/* A tick's two clocks: CLOCK_REALTIME (the samples' time label) and
 * CLOCK_MONOTONIC (the samples' wall values, the perf samples' times). */
struct tick_clock {
        uint64_t realtime_ns, ns;
};

/* Phase 3 for a thread whose ring holds samples: the oldest is unwound and
 * recorded, and the thread gets no other sample this tick; the rest stay
 * in the ring for the next ticks.  One per tick, as every thread gets: a
 * Splunk record is one snapshot per tick, each thread once, and a thread's
 * CPU time cannot outrun the wall clock, so they do not pile up while the
 * tracer keeps up (ticks it misses lose samples, as stops would: the ring
 * fills and the kernel counts what it drops).  Its process publishes no
 * span context (uses_perf). */
static void take_perf_samples(struct registry *registry, struct target *target,
                              struct tthread *thread, const struct tick_clock *tick)
{
        struct capture *capture = &thread->capture;
        struct perf_sample_info info;
        uint64_t lost = thread->perf.lost;

        thread->blocked_candidate = thread->reuse_last_stack = false;
        if (capture__ready(capture) < 0) {
                perf_sampler__discard(&thread->perf);
                registry->stats.skipped++;
                return;
        }
        if (perf_sampler__next(&thread->perf, capture, target->mem_pid, thread->tid, &info) == 1) {
                capture->time_ns = tick->realtime_ns + (info.time_ns - tick->ns);
                thread->perf_time_ns = info.time_ns;
                thread->perf_period_ns = info.period_ns;
                thread->captured = true;
                unwind_capture(registry, target, thread);
                record_thread(registry, target, thread, tick->realtime_ns, tick->ns);
        } else {
                registry->stats.skipped++; /* only a lost-samples record, or a bad one */
        }
        thread->captured = false;
        registry->stats.perf_lost += thread->perf.lost - lost;
}

static size_t sample_and_unwind_target(struct registry *registry, struct target *target,
                                       const struct tick_clock *tick)
{
        size_t needs_stop = 0;

        /* Samples that arrived since phase 1 count too: the thread ran. */
        for (size_t i = 0; i < target->n_threads; i++) {
                struct tthread *thread = target->threads[i];
                if (thread->perf_tick && perf_sampler__pending(&thread->perf))
                        thread->perf_due = true;
                if (thread->perf_due)
                        thread->blocked_candidate = thread->reuse_last_stack = false;
        }
        event_pump__busy(registry, "tick: blocked copies");
        for (size_t i = 0; !target->gone && i < target->n_threads; i++)
                if (target->threads[i]->blocked_candidate)
                        sample_blocked(registry, target, target->threads[i]);
        if (target->gone || target->releasing || !target->owner)
                return 0;
        event_pump__busy(registry, "tick: maps refresh");
        refresh_address_space(registry, target);
        event_pump__busy(registry, "tick: perf samples");
        for (size_t i = 0; !target->gone && i < target->n_threads; i++)
                if (target->threads[i]->perf_due)
                        take_perf_samples(registry, target, target->threads[i], tick);
        event_pump__busy(registry, "tick: unwinding");
        for (size_t i = 0; i < target->n_threads; i++) {
                struct tthread *thread = target->threads[i];
                thread->needs_stop = false;
                if (!thread->captured)
                        continue;
                unwind_capture(registry, target, thread);
                needs_stop += thread->needs_stop;
                if (thread->idle_key_valid && !thread->needs_stop)
                        give_back_buffers(registry, thread);
        }
        return needs_stop;
}

/* Phase 3, first: what of the stopped threads moves fastest and is not in their
 * copies, read before any unwinding (the span an asyncio task is in: it
 * may end a few hundred microseconds later). */
static void read_tasks(struct registry *registry)
{
        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                struct profiled_target *profiled = target->owner;
                if (target->gone || !profiled || !profiled->python || target->releasing)
                        continue;
                for (size_t i = 0; i < target->n_threads; i++)
                        if (target->threads[i]->captured)
                                py_process__read_task(profiled->python,
                                                      &target->threads[i]->capture);
        }
}

static size_t sample_and_unwind(struct registry *registry, const struct tick_clock *tick)
{
        size_t needs_stop = 0;
        uint64_t checked_ns = monotonic_ns();

        read_tasks(registry); /* first: a task may end while we unwind */
        event_pump__busy(registry, "tick: maps applied");
        profiled_target__take_maps(registry);
        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                if (target->gone || !target->owner || target->releasing)
                        continue;
                needs_stop += sample_and_unwind_target(registry, target, tick);
                handle_events_if_due(registry, &checked_ns);
        }
        return needs_stop;
}

/* After a re-stop the thread is blocked where it was (idle_point): let it
 * reuse this stack while it stays there.  The stop itself scheduled it,
 * so its run count is read again. */
static void keep_idle_key(struct target *target, struct tthread *thread)
{
        thread->idle_key_valid = proc_thread__run_count(&thread->files, target->pid, thread->tid,
                                                        &thread->idle_run_count);
}

/* Phase 4: stop the blocked threads that could not be unwound,
 * if they are still blocked in the same (transparently restarting) call. */
static void restop_blocked_threads(struct registry *registry)
{
        struct blocked_point now;
        size_t pending = 0;
        uint64_t since_ns = monotonic_ns();

        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                for (size_t i = 0; !target->gone && i < target->n_threads; i++) {
                        struct tthread *thread = target->threads[i];
                        if (!thread->needs_stop)
                                continue;
                        thread->captured = false;
                        if (proc_thread__syscall(&thread->files, &now) == PROC_SYSCALL_BLOCKED &&
                            same_point(&now, &thread->capture.blocked) &&
                            capture__ready(&thread->capture) == 0 &&
                            ptrace_events__interrupt(thread) == 0)
                                pending++;
                        else
                                registry->stats.skipped++;
                }
        }
        registry->taking_stops = true;
        wait_for_stops(registry, pending, since_ns);
        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                for (size_t i = 0; !target->gone && i < target->n_threads; i++) {
                        struct tthread *thread = target->threads[i];
                        if (thread->needs_stop && thread->captured) {
                                unwind_capture(registry, target, thread);
                                registry->stats.samples_restopped++;
                                keep_idle_key(target, thread);
                        }
                }
        }
}

/* Phase 5. */
static void record_samples(struct registry *registry, uint64_t tick_realtime_ns, uint64_t tick_ns)
{
        uint64_t threads = 0, checked_ns = monotonic_ns();

        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                if (target->gone || !target->owner || target->releasing)
                        continue;
                for (size_t i = 0; i < target->n_threads; i++) {
                        struct tthread *thread = target->threads[i];
                        threads += !thread->exited;
                        if (thread->captured || thread->reuse_last_stack)
                                record_thread(registry, target, thread, tick_realtime_ns, tick_ns);
                }
                handle_events_if_due(registry, &checked_ns);
        }
        registry->stats.thread_samples_asked += threads;
        registry->stats.last_threads = threads;
        if (threads > registry->stats.max_threads)
                registry->stats.max_threads = threads;
}

void sampler__tick(struct registry *registry, uint64_t tick_realtime_ns)
{
        size_t pending;
        uint64_t begin = monotonic_ns(), tick_ns = begin;

        registry->stats.ticks++;
        registry->taking_stops = true; /* until wait_for_stops ends */
        event_pump__busy(registry, "tick: interrupting");
        pending = interrupt_running_threads(registry);
        wait_for_stops(registry, pending, begin);
        begin = monotonic_ns();
        event_pump__busy(registry, "tick: unwinding");
        if (sample_and_unwind(registry, &(struct tick_clock){tick_realtime_ns, tick_ns}) > 0) {
                event_pump__busy(registry, "tick: re-stopping");
                restop_blocked_threads(registry);
        }
        event_pump__busy(registry, "tick: recording");
        record_samples(registry, tick_realtime_ns, tick_ns);
        registry->stats.unwind_ns += monotonic_ns() - begin;
}
