/* watch.c — see watch.h.
 *
 * Attaching: a discovered process passes target_check (not ourselves, not
 * a kernel thread, not a zombie, not traced by someone else), then the
 * rules; it is seized with follow_forks, so the kernel attaches its
 * children for us and the fork event (or the child's first stop) makes
 * each one a target of its own, with its own process.pid.
 *
 * Releasing one target while the daemon goes on: PTRACE_DETACH needs a
 * ptrace-stop, and stopping a thread blocked in epoll_wait or nanosleep
 * can make that call fail with EINTR.  So a thread is detached only at a
 * stop that costs nothing: the exec stop (a process that execs into an
 * unlabelled or denied program is detached there, before the new program
 * runs), a fork/clone/signal stop, or an interrupt of a thread that is
 * running ('R') or blocked in a call that restarts transparently.  A
 * thread blocked in any other call stays attached, unsampled, until it
 * next runs; it is never stopped for our sake.  (At SIGTERM the tracer
 * thread exits and the kernel releases every thread without a stop.)
 *
 * Exits: the leader's exit status marks the target gone; it is flushed to
 * the exporter, its per-process caches are freed and it leaves the set on
 * the next pass, so memory and descriptors do not grow with churn.  After
 * targets were freed, free heap pages go back to the kernel (malloc_trim,
 * at most once per TRIM_PERIOD_NS): otherwise the high-water mark of a
 * burst of live targets (several MiB each) stays in RSS for good, as holes
 * that fragmentation keeps below the top of the heap.  The same happens
 * after the sampler gave back a MiB or more of idle threads' capture
 * buffers (engine/sampler.c), which are below the top of the heap too. */
#include "engine/watch.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/proc_thread.h"
#include "attach/target_check.h"
#include "attach/syscall_restart.h"
#include "engine/event_pump.h"
#include "engine/profiled_target.h"
#include "otlp/exporter.h"
#include "symbolize/symbolizer.h"
#include "util/cleanup.h"
#include "util/log.h"

#define TRIM_PERIOD_NS         (1000ull * 1000 * 1000)
#define EVENTS_EVERY_NS        (1000ull * 1000)
#define TRIM_CAPTURE_BYTES_MIN (1024 * 1024)

struct watch *watch__new(void)
{
        struct watch *watch = calloc(1, sizeof(*watch));

        if (!watch)
                return NULL;
        discovery__init(&watch->discovery);
        watch->facts = (struct facts_reader)FACTS_READER_INIT;
        return watch;
}

void watch__free(struct watch *watch)
{
        if (!watch)
                return;
        discovery__release(&watch->discovery);
        facts_reader__release(&watch->facts);
        free(watch);
}

int watch__fd(const struct registry *registry)
{
        return registry->watch ? registry->watch->discovery.netlink_fd : -1;
}

/* ----------------------------------------------------------- decisions */

enum verdict { VERDICT_PROFILE, VERDICT_UNLABELLED, VERDICT_DENIED, VERDICT_GONE };

/* The rules' verdict on `facts`; VERDICT_UNLABELLED still becomes
 * VERDICT_PROFILE if the process maps a span-context segment. */
static enum verdict judge(const struct registry *registry, const struct proc_facts *facts)
{
        const struct watch_rules *rules = &registry->config.rules;
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

        if (n > 0 && (self[n] = '\0', strcmp(self, facts->exe) == 0))
                return VERDICT_DENIED; /* another splunk-profd */
        if (watch_rule_list__matches(&rules->deny, facts))
                return VERDICT_DENIED;
        if (proc_facts__labelled(facts) || watch_rule_list__matches(&rules->allow, facts))
                return VERDICT_PROFILE;
        return VERDICT_UNLABELLED;
}

/* The verdict with every fact read here: for an exec stop (the process is
 * stopped, and holds none of its locks) and the rare other cases. */
static enum verdict decide(const struct registry *registry, pid_t pid)
{
        struct proc_facts facts;
        enum verdict verdict;

        if (proc_facts__read(pid, &facts) < 0) {
                proc_facts__release(&facts);
                return VERDICT_GONE;
        }
        verdict = judge(registry, &facts);
        if (verdict == VERDICT_UNLABELLED && proc_facts__has_segment(pid))
                verdict = VERDICT_PROFILE;
        proc_facts__release(&facts);
        return verdict;
}

/* The verdict from a look the facts reader made (its texts are taken). */
static enum verdict decide_from(const struct registry *registry, struct facts_answer *answer)
{
        struct proc_facts facts;
        enum verdict verdict = VERDICT_GONE;

        if (answer->environ_error >= 0 && proc_facts__read_but_environ(answer->pid, &facts) >= 0) {
                facts.environ = take_ptr(answer->environ);
                facts.environ_len = answer->environ_len;
                verdict = judge(registry, &facts);
                if (verdict == VERDICT_UNLABELLED &&
                    proc_facts__maps_have_segment(answer->maps, answer->maps_len))
                        verdict = VERDICT_PROFILE;
                proc_facts__release(&facts);
        }
        facts_answer__release(answer);
        return verdict;
}

static struct target *find_target(struct registry *registry, pid_t pid)
{
        for (size_t i = 0; i < registry->targets.n_targets; i++) {
                struct target *target = registry->targets.targets[i];
                if (target->pid == pid && !target->gone)
                        return target;
        }
        return NULL;
}

static struct target_options target_options(const struct registry *registry)
{
        return (struct target_options){
            .stack_bytes = registry->config.stack_bytes,
            .max_depth = registry->config.max_depth,
            .follow_forks = true,
        };
}

static enum seen_state attach(struct registry *registry, pid_t pid)
{
        struct target_options options = target_options(registry);
        struct target *target = NULL;
        char why[256];

        event_pump__busy(registry, "watch: attach");
        if (target__attach(pid, &options, &target, why, sizeof(why)) < 0) {
                log_warning("watch: %s", why);
                return SEEN_REJECTED;
        }
        if (target_set__add(&registry->targets, target) < 0) {
                target__free(target); /* its threads are let go at their next stop */
                return SEEN_REJECTED;
        }
        registry->watch->attached++;
        log_info("watch: attached to PID %d (%s), %zu threads", (int)pid, target->comm,
                 target->n_threads);
        return SEEN_TARGET;
}

/* A /proc scan examines every process of the host, and attaching one can
 * take a few ms: targets' ptrace events are answered in between, at most
 * EVENTS_EVERY_NS apart.  Before the look at `pid`, whose fork event may
 * be among them.  (discovery.c reads nothing of its own across the call.) */
static void answer_events_if_due(struct registry *registry)
{
        uint64_t now = monotonic_ns();

        if (now - registry->watch->events_checked_ns < EVENTS_EVERY_NS)
                return;
        registry->watch->events_checked_ns = now;
        event_pump__wait(registry, 0);
}

static enum seen_state examine(void *arg, pid_t pid, int previous)
{
        struct registry *registry = arg;
        char why[256];

        answer_events_if_due(registry);
        event_pump__busy(registry, "watch: discovery");
        if (find_target(registry, pid))
                return SEEN_TARGET;
        if (target_check__tracer_of(pid) == gettid())
                return SEEN_TARGET; /* a forked child whose fork event is on its way */
        switch (target_check(pid, why, sizeof(why))) {
        case TARGET_OK:
                break;
        case TARGET_ALREADY_TRACED:
                if (previous != SEEN_TRACED_OTHER && decide(registry, pid) == VERDICT_PROFILE)
                        log_warning("watch: not profiled: %s", why); /* once per process */
                return SEEN_TRACED_OTHER;
        default:
                return SEEN_REJECTED;
        }
        /* The environment and maps: read off the tracer, judged when back. */
        if (facts_reader__ask(&registry->watch->facts, pid, previous, monotonic_ns()))
                return SEEN_LOOKING;
        event_pump__busy(registry, "watch: facts"); /* decide's reads of /proc */
        if (decide(registry, pid) != VERDICT_PROFILE)
                return SEEN_REJECTED;
        return attach(registry, pid);
}

/* The looks the facts reader finished: a process found selected is
 * attached if it still can be (it may have exited, or been attached as
 * a forked child, meanwhile). */
static void take_looks(struct registry *registry)
{
        struct facts_answer answer;
        char why[256];

        while (facts_reader__take(&registry->watch->facts, &answer, monotonic_ns())) {
                enum seen_state state = SEEN_REJECTED;

                event_pump__busy(registry, "watch: facts taken");
                if (decide_from(registry, &answer) == VERDICT_PROFILE) {
                        if (find_target(registry, answer.pid) ||
                            target_check__tracer_of(answer.pid) == gettid())
                                state = SEEN_TARGET;
                        else if (target_check(answer.pid, why, sizeof(why)) == TARGET_OK)
                                state = attach(registry, answer.pid);
                }
                discovery__set(&registry->watch->discovery, answer.pid, state, monotonic_ns());
                answer_events_if_due(registry);
        }
}

/* ------------------------------------------------------ ptrace events */

/* A child that exits at once can have its exit reported before its
 * parent's fork event: that exit named a pid we did not know, and no
 * other will come, so a target made now would never be freed.  Such a
 * child is a zombie (its parent has not waited yet) or already gone. */
static bool has_exited(const struct target *target)
{
        char state = proc_thread__state(&target->threads[0]->files);

        return state == 0 || state == 'Z' || state == 'X';
}

void watch__on_fork(struct registry *registry, struct target *parent, pid_t child)
{
        struct target *target = target__adopt(child, &parent->options);

        if (!target)
                return; /* detached at its first stop */
        if (has_exited(target)) {
                registry->watch->exited++;
                target__free(target);
                return;
        }
        if (target_set__add(&registry->targets, target) < 0) {
                target__free(target);
                return;
        }
        registry->watch->forks++;
        discovery__set(&registry->watch->discovery, child, SEEN_TARGET, monotonic_ns());
        log_info("watch: following PID %d, forked by PID %d", (int)child, (int)parent->pid);
}

/* Judged here, in the exec stop: the process is stopped with one thread
 * left and holds neither its exec lock (released before the stop is
 * reported) nor its mmap lock, so the reads wait on nothing (the -vv line
 * measures them, bench/RESULTS.md). */
void watch__on_exec(struct registry *registry, struct target *target)
{
        uint64_t start_ns = monotonic_ns();
        enum verdict verdict = decide(registry, target->pid);

        log_debug("PID %d: exec judged in %llu us", (int)target->pid,
                  (unsigned long long)(monotonic_ns() - start_ns) / 1000);

        /* The new program gets fresh state (or none). */
        profiled_target__release(registry, target);
        if (verdict == VERDICT_PROFILE)
                return;           /* re-prepared on the next pass */
        target->releasing = true; /* detached in this exec stop */
        registry->watch->released++;
        discovery__set(&registry->watch->discovery, target->pid, SEEN_REJECTED, monotonic_ns());
        log_info("watch: released PID %d: it executed an %s program", (int)target->pid,
                 verdict == VERDICT_DENIED ? "excluded" : "unlabelled");
}

/* --------------------------------------------------------- maintenance */

static void reap(struct registry *registry)
{
        struct target_set *set = &registry->targets;

        for (size_t i = 0; i < set->n_targets;) {
                struct target *target = set->targets[i];
                if (!target->gone) {
                        i++;
                        continue;
                }
                if (!target->released)
                        registry->watch->exited++;
                profiled_target__release(registry, target);
                target__free(target);
                set->targets[i] = set->targets[--set->n_targets];
                registry->watch->freed_since_trim++;
        }
}

static void trim_heap(struct watch *watch, uint64_t capture_bytes_freed, uint64_t now_ns)
{
        uint64_t since_trim = capture_bytes_freed - watch->capture_bytes_at_trim;

        if ((!watch->freed_since_trim && since_trim < TRIM_CAPTURE_BYTES_MIN) ||
            now_ns - watch->last_trim_ns < TRIM_PERIOD_NS)
                return;
        (void)malloc_trim(0);
        watch->freed_since_trim = 0;
        watch->capture_bytes_at_trim = capture_bytes_freed;
        watch->last_trim_ns = now_ns;
}

/* Per-process set-up (address space, Python runtime discovery, export
 * record) must not hold up ticks, nor forked children waiting in their
 * first stop, nor the interrupted threads of other targets.  Its first
 * step, reading /proc/PID/maps, can wait tens of ms on a starting
 * process's mmap lock: the maps reader does it, and the rest follows when
 * the text comes (profiled_target__take_maps, here and at each tick).
 * The rest is mostly CPU work, about a millisecond per process (its reads
 * of the target's memory and map_files can still wait on that lock:
 * bench/RESULTS.md), and under churn many processes arrive at once: so
 * one target at a time, ptrace events handled after each (which resumes
 * new children and threads), and no more once the next tick is due (but
 * one per tick even so, so that set-up goes on however late ticks run).
 * The oldest targets go first: targets are appended to the set. */
static void prepare_new(struct registry *registry, uint64_t deadline_ns)
{
        size_t prepared = 0;

        for (size_t i = 0; i < registry->targets.n_targets; i++) {
                struct target *target = registry->targets.targets[i];
                if (target->gone || target->releasing)
                        continue;
                if (target->owner) {
                        /* A program that execed into Python (issue 17). */
                        event_pump__busy(registry, "watch: Python retry");
                        profiled_target__retry_python(registry, target, monotonic_ns());
                        continue;
                }
                if (profiled_target__setup_awaited(target, monotonic_ns()))
                        continue;
                if (monotonic_ns() >= deadline_ns) {
                        if (prepared > 0 ||
                            registry->watch->prepared_at_tick == registry->stats.ticks)
                                break;
                        registry->watch->prepared_at_tick = registry->stats.ticks;
                }
                event_pump__busy(registry, "watch: set-up");
                (void)profiled_target__ask_setup(registry, target, monotonic_ns());
                prepared++;
                event_pump__wait(registry, 0); /* may add targets: i is re-read */
        }
}

/* Interrupts the threads of releasing targets that can take a stop for
 * free; ptrace_events detaches them in that stop. */
static void release_step(struct registry *registry)
{
        struct blocked_point point;

        for (size_t t = 0; t < registry->targets.n_targets; t++) {
                struct target *target = registry->targets.targets[t];
                for (size_t i = 0; target->releasing && !target->gone && i < target->n_threads;
                     i++) {
                        struct tthread *thread = target->threads[i];
                        if (thread->interrupt_pending || thread->group_stopped)
                                continue;
                        char state = proc_thread__state(&thread->files);
                        bool free_stop =
                            state == 'R' ||
                            (state == 'S' &&
                             proc_thread__syscall(&thread->files, &point) == PROC_SYSCALL_BLOCKED &&
                             syscall_restart__is_transparent(point.syscall_nr));
                        if (free_stop)
                                (void)ptrace_events__interrupt(thread);
                }
        }
}

/* The heap in use in KiB, by malloc's own count: unlike RSS it does not
 * move with pages trimmed or not yet trimmed, so the health line can show
 * what stays behind after the targets are gone. */
static size_t heap_in_use_kib(void)
{
        struct mallinfo2 m = mallinfo2();

        return (m.uordblks + m.hblkhd) / 1024;
}

static void log_health(struct registry *registry, uint64_t now_ns)
{
        struct watch *watch = registry->watch;
        double period = registry->config.health_interval_s;
        struct exporter_stats e = {0};
        struct symbolizer_stats sym = {0};
        uint64_t threads = 0;

        if (period <= 0 || now_ns < watch->next_health_ns)
                return;
        if (watch->next_health_ns) {
                for (size_t i = 0; i < registry->targets.n_targets; i++)
                        threads += registry->targets.targets[i]->n_threads;
                if (registry->exporter)
                        exporter__stats_running(registry->exporter, &e);
                if (registry->symbolizer)
                        symbolizer__stats(registry->symbolizer, &sym);
                const struct run_stats *st = &registry->stats;
                log_notice(
                    "health: targets=%zu threads=%llu samples_per_s=%.1f skipped=%llu "
                    "ticks_asked=%llu ticks_taken=%llu samples_asked=%llu samples_taken=%llu "
                    "attached=%llu forks=%llu released=%llu exited=%llu interval_ms=%lld "
                    "export_queue_peak_bytes=%zu export_dropped=%llu export_failed=%llu "
                    "discovery=%s heap_kib=%zu symbol_lines=%zu symbol_lines_evicted=%llu "
                    "strings=%zu mappings=%zu",
                    target_set__live_count(&registry->targets), (unsigned long long)threads,
                    (double)(registry->stats.samples - watch->health_samples) / period,
                    (unsigned long long)(registry->stats.skipped - watch->health_skipped),
                    (unsigned long long)(st->ticks + st->ticks_missed - watch->health_ticks -
                                         watch->health_ticks_missed),
                    (unsigned long long)(st->ticks - watch->health_ticks),
                    (unsigned long long)(st->thread_samples_asked - watch->health_samples_asked),
                    (unsigned long long)(st->samples - watch->health_samples),
                    (unsigned long long)watch->attached, (unsigned long long)watch->forks,
                    (unsigned long long)watch->released, (unsigned long long)watch->exited,
                    (long long)registry->config.interval_ms, e.peak_queue_bytes,
                    (unsigned long long)e.dropped_records, (unsigned long long)e.failed_records,
                    watch->discovery.netlink_fd >= 0 ? "netlink" : "proc-scan", heap_in_use_kib(),
                    sym.lines, (unsigned long long)sym.lines_evicted, sym.strings, sym.mappings);
        }
        watch->health_samples = registry->stats.samples;
        watch->health_skipped = registry->stats.skipped;
        watch->health_ticks = registry->stats.ticks;
        watch->health_ticks_missed = registry->stats.ticks_missed;
        watch->health_samples_asked = registry->stats.thread_samples_asked;
        watch->next_health_ns = now_ns + (uint64_t)(period * 1e9);
}

void watch__maintain(struct registry *registry, uint64_t now_ns, bool readable,
                     uint64_t deadline_ns)
{
        struct watch *watch = registry->watch;

        event_pump__busy(registry, "watch: discovery");
        if (readable)
                discovery__read_netlink(&watch->discovery);
        reap(registry);
        trim_heap(watch, registry->stats.capture_bytes_freed, now_ns);
        take_looks(registry);
        event_pump__busy(registry, "watch: discovery");
        discovery__pass(&watch->discovery, now_ns, examine, registry);
        event_pump__busy(registry, "watch: set-up");
        profiled_target__take_maps(registry); /* the set-ups whose maps came */
        prepare_new(registry, deadline_ns);
        event_pump__busy(registry, "watch: release");
        release_step(registry);
        log_health(registry, now_ns);
}

/* A deny rule added by a reload releases the targets it now matches. */
static void release_denied(struct registry *registry)
{
        for (size_t i = 0; i < registry->targets.n_targets; i++) {
                struct target *target = registry->targets.targets[i];
                if (target->gone || target->releasing ||
                    decide(registry, target->pid) == VERDICT_PROFILE)
                        continue;
                profiled_target__release(registry, target);
                target->releasing = true;
                registry->watch->released++;
                discovery__set(&registry->watch->discovery, target->pid, SEEN_REJECTED,
                               monotonic_ns());
                log_info("watch: releasing PID %d: no longer selected after reload",
                         (int)target->pid);
        }
}

bool watch__apply_reload(struct registry *registry)
{
        struct watch_settings settings;
        bool pending, changed;
        uint64_t value;

        (void)!read(registry->reload_fd, &value, sizeof(value));
        pthread_mutex_lock(&registry->reload_lock);
        pending = registry->reload_pending;
        settings = registry->reload;
        registry->reload_pending = false;
        pthread_mutex_unlock(&registry->reload_lock);
        if (!pending)
                return false;
        changed = settings.interval_ms != registry->config.interval_ms;
        registry->config.interval_ms = settings.interval_ms;
        registry->recorder.period_ms = settings.interval_ms;
        registry->config.health_interval_s = settings.health_interval_s;
        registry->config.rules = settings.rules;
        release_denied(registry);
        log_notice("reloaded: interval_ms=%lld allow_rules=%zu deny_rules=%zu targets=%zu",
                   (long long)settings.interval_ms, settings.rules.allow.n, settings.rules.deny.n,
                   target_set__live_count(&registry->targets));
        return changed;
}
