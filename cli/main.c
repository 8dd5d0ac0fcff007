/* main.c — `splunk-profd [record|dump|top] --pid N ...`: parse, start the
 * exporter thread (when exporting to Splunk) and the tracer thread, wait
 * for the tracer or for SIGINT/SIGTERM, then finish the subcommand:
 *
 *   record  write the profile (pprof, collapsed, speedscope or SVG, all from
 *           the one profile builder) and a summary line;
 *   dump    the tracer stops after one tick; print what the dump sink kept
 *           (a launched COMMAND's tick comes after --wait SEC; the command
 *           then runs on and is waited for, as with record);
 *   top     cli/cmd_top.c runs its own terminal loop instead.
 *
 * All three share the tracer and the sampler; they differ only in the sink
 * the sampler hands its samples to (engine/sample_sink.h).
 *
 * Three threads at most: main (signals, file output, terminal), the tracer
 * (every ptrace call, sampling, record encoding) and the exporter (gRPC
 * only, fed by a bounded queue, so a slow or absent collector never delays
 * a tick).
 *
 * The main thread never touches a tracee.  It owns the signals: SIGINT,
 * SIGTERM and SIGHUP are read from a signalfd (so no handler ever runs at a
 * bad moment), and SIGCHLD is blocked here and read by the tracer. */
#include <errno.h>
#include <poll.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cmd_dump.h"
#include "cli/cmd_top.h"
#include "cli/cli.h"
#include "cli/config_file.h"
#include "cli/launch.h"
#include "cli/progress.h"
#include "cli/registry_setup.h"
#include "engine/registry.h"
#include "engine/run_status.h"
#include "engine/process_tree.h"
#include "engine/profiled_target.h"
#include "engine/tracer.h"
#include "engine/watch.h"
#include "render/collapsed.h"
#include "otlp/exporter.h"
#include "render/flamegraph_svg.h"
#include "pprof/output_target.h"
#include "pprof/profile_builder.h"
#include "pprof/profile_file.h"
#include "render/speedscope.h"
#include "symbolize/symbolizer.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/sd_notify.h"

/* On shutdown, queued records get this long to reach the collector. */
#define EXPORT_SHUTDOWN_DEADLINE_MS 5000
/* The progress line is redrawn this often on a terminal. */
#define PROGRESS_REDRAW_MS 250

/* Per-thread /proc files are kept open: allow as many as the hard limit. */
static void raise_fd_limit(void)
{
        struct rlimit limit;

        if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
                limit.rlim_cur = limit.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &limit);
        }
}

/* `top` also reads SIGWINCH (terminal resized) from the signalfd. */
static int block_signals(bool with_winch)
{
        sigset_t mask;

        sigemptyset(&mask);
        if (with_winch)
                sigaddset(&mask, SIGWINCH);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        /* Job control: stopping this process while it traces would hold
         * every target thread that hits a ptrace event (a signal, a clone)
         * until SIGCONT.  These come through the signalfd instead; `record`
         * and `dump` release the targets before stopping (suspend_run). */
        sigaddset(&mask, SIGTSTP);
        sigaddset(&mask, SIGTTIN);
        sigaddset(&mask, SIGTTOU);
        signal(SIGPIPE, SIG_IGN);
        int r = pthread_sigmask(SIG_BLOCK, &mask, NULL);
        if (r != 0)
                return -r;
        sigdelset(&mask, SIGCHLD);
        int fd = signalfd(-1, &mask, SFD_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* What main keeps for --watch: argv for re-parsing on SIGHUP, the
 * config file as merged at start, and the watchdog bookkeeping. */
struct daemon_state {
        int argc;
        char **argv;
        const struct config_file *startup_file;
        uint64_t watchdog_usec;
        uint64_t last_heartbeat;
        struct export_config export; /* as in effect now (reloads included) */
};

/* SIGHUP and export: the collector connection (endpoint, TLS, CA file,
 * headers, timeout) switches at once without losing queued records
 * (exporter__reconfigure); turning export on or off, its memory budget
 * and its flush interval are fixed at start, so a change to those is
 * reported in one line and otherwise ignored. */
static void reload_export(struct registry *registry, struct daemon_state *daemon,
                          const struct export_config *wanted)
{
        struct export_config *now = &daemon->export;
        char restart[160] = "", error[512];

        if (wanted->enabled != now->enabled)
                snprintf(restart, sizeof(restart), "%s",
                         wanted->enabled ? "export on" : "export off");
        else if (wanted->enabled && wanted->memory_mb != now->memory_mb)
                snprintf(restart, sizeof(restart), "--export-memory-mb");
        else if (wanted->enabled && wanted->flush_interval_ms != now->flush_interval_ms)
                snprintf(restart, sizeof(restart), "flush interval (%lld ms)",
                         (long long)wanted->flush_interval_ms);
        if (restart[0])
                log_warning("reload: %s needs a restart; keeping %s", restart,
                            now->enabled ? "the export settings in effect" : "export off");
        if (!registry->exporter || !wanted->enabled || export_config__same_connection(wanted, now))
                return;
        if (exporter__reconfigure(registry->exporter, wanted, error, sizeof(error)) < 0) {
                log_warning("reload: export: %s; still sending to %s", error, now->endpoint);
                return;
        }
        snprintf(now->endpoint, sizeof(now->endpoint), "%s", wanted->endpoint);
        snprintf(now->target, sizeof(now->target), "%s", wanted->target);
        snprintf(now->ca_file, sizeof(now->ca_file), "%s", wanted->ca_file);
        now->tls = wanted->tls;
        now->timeout_ms = wanted->timeout_ms;
        now->n_headers = wanted->n_headers;
        memcpy(now->headers, wanted->headers, sizeof(now->headers));
}

/* SIGHUP: re-read the config file and argv; queue what may change. */
static void reload(struct registry *registry, struct daemon_state *daemon)
{
        _cleanup_free_ struct profd_config *config = malloc(sizeof(*config));
        struct config_file current = {0};
        struct config_source source = {.startup = daemon->startup_file, .current = &current};
        char error[512];
        uint64_t one = 1;

        if (!config)
                return;
        if (registry->config.config_path &&
            config_file__read(registry->config.config_path, &current, error, sizeof(error)) < 0) {
                log_warning("reload ignored: %s", error);
                return;
        }
        if (cli__parse(daemon->argc, daemon->argv, &source, config, error, sizeof(error)) !=
            CLI_RUN) {
                log_warning("reload ignored: %s", error);
                config_file__release(&current);
                return;
        }
        config_file__release(&current);
        reload_export(registry, daemon, &config->export);
        pthread_mutex_lock(&registry->reload_lock);
        registry->reload = (struct watch_settings){
            .interval_ms = config->interval_ms,
            .health_interval_s = config->health_interval_s,
            .rules = config->rules,
        };
        registry->reload_pending = true;
        pthread_mutex_unlock(&registry->reload_lock);
        (void)!write(registry->reload_fd, &one, sizeof(one));
}

/* WATCHDOG=1 only while the tracer loop is alive. */
static void feed_watchdog(struct registry *registry, struct daemon_state *daemon)
{
        uint64_t beat = atomic_load(&registry->heartbeat);

        if (!daemon || !daemon->watchdog_usec || beat == daemon->last_heartbeat)
                return;
        daemon->last_heartbeat = beat;
        (void)sd_notify__send("WATCHDOG=1");
}

static int poll_timeout(const struct progress *progress, const struct daemon_state *daemon)
{
        if (daemon && daemon->watchdog_usec)
                return (int)(daemon->watchdog_usec / 4000 ?: 1);
        return progress->out ? PROGRESS_REDRAW_MS : -1;
}

static bool is_job_control(uint32_t signo)
{
        return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU;
}

/* Returns true when the signal asks the run to suspend (job control). */
static bool on_signal(struct registry *registry, struct daemon_state *daemon, struct launch *launch,
                      const struct signalfd_siginfo *info)
{
        uint64_t one = 1;

        if (is_job_control(info->ssi_signo)) {
                log_notice("signal %u: releasing every target, then suspending", info->ssi_signo);
                (void)!write(registry->stop_fd, &one, sizeof(one));
                return true;
        }

        if (launch) {
                /* The run ends when the command does, not before. */
                launch__forward_signal(launch, info);
                return false;
        }
        if (info->ssi_signo == SIGHUP) {
                if (daemon) {
                        (void)sd_notify__send("RELOADING=1");
                        reload(registry, daemon);
                        (void)sd_notify__send("READY=1");
                }
                return false;
        }
        log_info("signal %u: stopping", info->ssi_signo);
        if (daemon)
                (void)sd_notify__send("STOPPING=1");
        (void)!write(registry->stop_fd, &one, sizeof(one));
        return false;
}

/* -- COMMAND: once the tracer has let it go (go_fd closed), whether its
 * exec failed; a failure ends the run (the child exits at once). */
static bool exec_failed(struct registry *registry, struct launch *launch)
{
        uint64_t one = 1;

        if (registry->command.go_fd >= 0 ||
            !launch__exec_error(launch, registry->config.command_argv[0]))
                return false;
        (void)!write(registry->stop_fd, &one, sizeof(one));
        return true;
}

/* -- COMMAND, after the profile: the command's exit status (waiting for
 * it when --duration ended first), or ours when we failed. */
static int command_result(struct registry *registry, struct launch *launch, int signal_fd,
                          int status)
{
        int wait_status;

        if (registry->command.go_fd >= 0) { /* never let go: it exits, unrun */
                close(registry->command.go_fd);
                registry->command.go_fd = -1;
        }
        bool failed = exec_failed(registry, launch);
        launch__release(launch);
        wait_status =
            registry->command.exited ? registry->command.status : launch__wait(launch, signal_fd);
        if (failed)
                return EXIT_USAGE;
        if (status != 0 || wait_status < 0)
                return status ? status : EXIT_RUNTIME;
        return launch__exit_code(wait_status);
}

/* Waits until the tracer finishes, forwarding SIGINT/SIGTERM as a stop
 * request.  A second signal is not needed: the tracer stops within one
 * poll period.  In --watch mode (`daemon` set) it also tells systemd
 * READY=1 once the tracer runs, feeds the watchdog, and reloads on SIGHUP. */
static bool wait_for_tracer(struct registry *registry, int signal_fd, struct progress *progress,
                            struct daemon_state *daemon, struct launch *launch)
{
        bool suspend = false;
        struct pollfd fds[2] = {
            {.fd = signal_fd, .events = POLLIN},
            {.fd = registry->done_fd, .events = POLLIN},
        };
        uint64_t value;
        struct signalfd_siginfo info;
        struct run_status status = {0};
        int timeout = poll_timeout(progress, daemon);

        for (;;) {
                int ready = poll(fds, 2, timeout);
                if (ready < 0 && errno != EINTR)
                        return suspend;
                if (ready == 0 && progress->out) {
                        (void)mailbox__receive(&registry->status, &status);
                        progress__draw(progress, &status);
                }
                feed_watchdog(registry, daemon);
                if (fds[1].revents & POLLIN) {
                        if (read(registry->done_fd, &value, sizeof(value)) == sizeof(value) &&
                            value >= 2)
                                return suspend;
                        if (daemon && value == 1)
                                (void)sd_notify__send("READY=1\nSTATUS=watching");
                        if (launch && value == 1)
                                (void)exec_failed(registry, launch);
                }
                if ((fds[0].revents & POLLIN) &&
                    read(signal_fd, &info, sizeof(info)) == sizeof(info))
                        suspend |= on_signal(registry, daemon, launch, &info);
        }
}

/* The tracer has exited, so the kernel has released every tracee: only
 * now may this process stop.  SIGSTOP, not the SIGTSTP that came (it is
 * blocked): the shell sees the job stopped either way.  On SIGCONT the
 * run goes on with a new tracer, which attaches afresh. */
static void suspend_run(struct registry *registry, struct progress *progress)
{
        uint64_t value;

        progress__clear(progress);
        tracer__forget_targets(registry);
        (void)!read(registry->stop_fd, &value, sizeof(value)); /* the stop we asked for */
        (void)kill(getpid(), SIGSTOP);
        log_notice("continued: attaching again");
        registry->resuming = true;
}

/* CPU time this process used so far, in ms. */
static uint64_t cpu_ms(void)
{
        struct rusage usage;

        if (getrusage(RUSAGE_SELF, &usage) < 0)
                return 0;
        return (uint64_t)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000u +
               (uint64_t)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000u;
}

/* The export counters, appended to the summary line ("" when off). */
static void format_export_summary(const struct registry *registry, char *out, size_t size)
{
        struct exporter_stats e;

        out[0] = '\0';
        if (!registry->exporter)
                return;
        exporter__stats(registry->exporter, &e);
        snprintf(out, size,
                 " export_records=%llu export_samples=%llu export_requests=%llu "
                 "export_bytes=%llu export_retries=%llu export_dropped=%llu export_failed=%llu "
                 "export_unsent=%llu export_peak_queue_bytes=%zu export_cpu_us=%llu "
                 "export_encode_us=%llu",
                 (unsigned long long)e.records_sent, (unsigned long long)e.samples_sent,
                 (unsigned long long)e.requests_sent, (unsigned long long)e.bytes_sent,
                 (unsigned long long)e.retries, (unsigned long long)e.dropped_records,
                 (unsigned long long)e.failed_records, (unsigned long long)e.unsent_at_exit,
                 e.peak_queue_bytes, (unsigned long long)(e.cpu_ns / 1000),
                 (unsigned long long)(registry->export_encode_ns / 1000));
}

static void print_summary(const struct registry *registry)
{
        const struct run_stats *s = &registry->stats;
        char export_summary[512];

        format_export_summary(registry, export_summary, sizeof(export_summary));
        fprintf(stderr,
                "splunk-profd: summary: targets=%zu threads=%llu samples=%llu skipped=%llu "
                "pause_p50_us=%llu pause_p99_us=%llu held_p50_us=%llu held_p99_us=%llu "
                "waited_p50_us=%llu waited_p99_us=%llu ticks_asked=%llu ticks_taken=%llu "
                "samples_asked=%llu running=%llu runnable=%llu cpu_charged_ms=%llu "
                "errors=%llu stopped=%llu blocked=%llu "
                "reused=%llu restopped=%llu perf=%llu perf_lost=%llu merge_failed=%llu "
                "signals_forwarded=%llu "
                "eintr_repaired=%llu interrupts_consumed=%llu cpu_ms=%llu%s\n",
                registry->targets.n_targets, (unsigned long long)s->max_threads,
                (unsigned long long)s->samples, (unsigned long long)s->skipped,
                (unsigned long long)run_stats__pause_percentile_us(s, 0.50),
                (unsigned long long)run_stats__pause_percentile_us(s, 0.99),
                (unsigned long long)pause_histogram__percentile_us(&s->held, 0.50),
                (unsigned long long)pause_histogram__percentile_us(&s->held, 0.99),
                (unsigned long long)pause_histogram__percentile_us(&s->waited, 0.50),
                (unsigned long long)pause_histogram__percentile_us(&s->waited, 0.99),
                (unsigned long long)(s->ticks + s->ticks_missed), (unsigned long long)s->ticks,
                (unsigned long long)s->thread_samples_asked, (unsigned long long)s->samples_running,
                (unsigned long long)s->samples_runnable,
                (unsigned long long)(s->cpu_charged_ns / 1000000u), (unsigned long long)s->errors,
                (unsigned long long)s->samples_stopped, (unsigned long long)s->samples_blocked,
                (unsigned long long)s->samples_reused, (unsigned long long)s->samples_restopped,
                (unsigned long long)s->samples_perf, (unsigned long long)s->perf_lost,
                (unsigned long long)s->merge_failed,
                (unsigned long long)registry->events.signals_reinjected,
                (unsigned long long)registry->events.eintr_repaired,
                (unsigned long long)registry->events.interrupts_consumed,
                (unsigned long long)cpu_ms(), export_summary);
}

/* One profile builder, four renderings of it. */
static int write_profile(struct profile_builder *builder, const struct profd_config *config,
                         const char *path)
{
        switch (config->format) {
        case OUTPUT_COLLAPSED:
                return collapsed__write(builder, path, config->threads);
        case OUTPUT_SPEEDSCOPE:
                return speedscope__write(builder, path);
        case OUTPUT_SVG:
                return flamegraph_svg__write(builder, path);
        case OUTPUT_PPROF:
                break;
        }
        return profile_file__write_pprof(builder, path);
}

static const char *format_suffix(enum output_format format)
{
        switch (format) {
        case OUTPUT_COLLAPSED:
                return ".txt";
        case OUTPUT_SPEEDSCOPE:
                return ".json";
        case OUTPUT_SVG:
                return ".svg";
        case OUTPUT_PPROF:
                break;
        }
        return ".pb.gz";
}

/* --output failed at the end (its directory went away, the disk filled):
 * the samples are not lost but saved under a fresh name in $TMPDIR or
 * /tmp, and the one error line says where.  Still exit 1. */
static int save_fallback(struct registry *registry, int error)
{
        const struct profd_config *config = &registry->config;
        char fallback[PATH_MAX];
        int r = output_target__fallback(format_suffix(config->format), fallback, sizeof(fallback));

        if (r >= 0) {
                r = write_profile(registry->builder, config, fallback);
                if (r < 0)
                        (void)unlink(fallback);
        }
        if (r < 0)
                log_error("cannot write %s: %s; nor a copy in $TMPDIR or /tmp: %s", config->output,
                          strerror(-error), strerror(-r));
        else
                log_error("cannot write %s: %s; the profile was saved to %s instead",
                          config->output, strerror(-error), fallback);
        return EXIT_RUNTIME;
}

static int write_output(struct registry *registry)
{
        int r;

        if (!registry->config.output)
                return 0;
        profile_builder__set_duration(registry->builder,
                                      (int64_t)(registry->end_ns - registry->start_ns));
        r = write_profile(registry->builder, &registry->config, registry->config.output);
        if (r < 0)
                return save_fallback(registry, r);
        log_info("wrote %zu samples to %s", profile_builder__sample_count(registry->builder),
                 registry->config.output);
        return 0;
}

/* --output is checked before any target is touched: a missing directory
 * must not cost an hour of sampling.  false with `error` set. */
static bool check_output(const struct profd_config *config, char *error, size_t error_size)
{
        char why[400];

        if (config->command != COMMAND_RECORD || !config->output ||
            output_target__check(config->output, why, sizeof(why)) >= 0)
                return true;
        snprintf(error, error_size, "--output %.200s: %.290s", config->output, why);
        return false;
}

/* Creates and starts the exporter thread when export is on.  Started
 * after the signals are blocked, so grpc's threads inherit the mask. */
static int start_exporter(struct registry *registry)
{
        char error[512];

        if (!registry->config.export.enabled)
                return 0;
        registry->exporter = exporter__new(&registry->config.export, error, sizeof(error));
        if (!registry->exporter) {
                log_error("export: %s", error);
                return -EINVAL;
        }
        int r = exporter__start(registry->exporter);
        if (r < 0)
                return log_error_errno(r, "export: cannot start the exporter thread");
        log_info("exporting to %s (%s)", registry->config.export.endpoint,
                 registry->config.export.tls ? "TLS" : "plaintext");
        return 0;
}

/* dump: the one tick's stacks; with -- COMMAND nothing when the command
 * ended before --wait was over (its status is what follows). */
static int print_dump(struct registry *registry, struct cmd_dump *dump, const struct launch *launch)
{
        if (launch && registry->stats.ticks == 0) {
                log_warning("%s exited before the dump (--wait %g)",
                            registry->config.command_argv[0], registry->config.first_tick_delay_s);
                return 0;
        }
        return cmd_dump__print(dump, stdout);
}

/* record and dump: the tracer runs until the duration, the single dump
 * tick, the last target's exit or a signal; then the command finishes. */
static int run(struct registry *registry, int signal_fd, struct cmd_dump *dump,
               struct daemon_state *daemon, struct launch *launch)
{
        struct progress progress;
        pthread_t tracer;
        int status;

        progress__init(&progress, dump || daemon ? NULL : stderr, registry->config.duration_s);
        for (;;) {
                if (pthread_create(&tracer, NULL, tracer__main, registry) != 0) {
                        log_error("cannot start the tracer thread");
                        return EXIT_RUNTIME;
                }
                bool suspend = wait_for_tracer(registry, signal_fd, &progress, daemon, launch);
                pthread_join(tracer, NULL);
                if (!suspend || registry->attach_error)
                        break;
                suspend_run(registry, &progress);
                if (registry->config.watch && !registry->watch) {
                        log_error("out of memory: cannot resume watching");
                        break;
                }
        }
        progress__clear(&progress);
        tracer__warn_if_behind(registry);
        if (registry->exporter)
                exporter__stop(registry->exporter,
                               registry->attach_error ? 0 : EXPORT_SHUTDOWN_DEADLINE_MS);
        if (registry->attach_error) {
                log_error("%s", registry->attach_why);
                status = registry->attach_exit_code;
        } else if (launch && exec_failed(registry, launch)) {
                status = EXIT_USAGE; /* nothing ran: no profile */
        } else if (dump) {
                status = print_dump(registry, dump, launch);
        } else {
                status = write_output(registry);
                print_summary(registry);
        }
        return launch ? command_result(registry, launch, signal_fd, status) : status;
}

static int run_command(struct registry *registry, int signal_fd, struct daemon_state *daemon,
                       struct launch *launch)
{
        _cleanup_(cmd_dump__freep) struct cmd_dump *dump = NULL;
        int status;

        switch (registry->config.command) {
        case COMMAND_TOP:
                status = cmd_top__run(registry, signal_fd, launch);
                if (!launch)
                        return status;
                /* Quitting top ends the command it started. */
                if (!registry->command.exited && registry->command.go_fd < 0 && !launch->exec_error)
                        (void)kill(launch->pid, SIGTERM);
                return command_result(registry, launch, signal_fd, status);
        case COMMAND_DUMP:
                dump = cmd_dump__new(registry->config.json);
                if (!dump) {
                        log_error("out of memory");
                        return EXIT_RUNTIME;
                }
                registry->sink = cmd_dump__sink(dump);
                return run(registry, signal_fd, dump, NULL, launch);
        case COMMAND_RECORD:
                break;
        }
        return run(registry, signal_fd, NULL, registry->config.watch ? daemon : NULL, launch);
}

/* --config FILE: read and merged into the environment before any thread
 * exists (config_file.h).  false with `error` set. */
static bool load_config_file(int argc, char **argv, struct config_file *file, char *error,
                             size_t error_size)
{
        const char *path = cli__config_path(argc, argv);

        if (!path)
                return true;
        if (config_file__read(path, file, error, error_size) < 0)
                return false;
        config_file__merge_into_environment(file);
        return true;
}

/* --name: the matching processes become the --pid list.  0, or the exit
 * status (2 ambiguous, 3 none) after a one-line error. */
static int resolve_name(struct profd_config *config)
{
        _cleanup_free_ struct process_match *matches = calloc(CONFIG_MAX_PIDS, sizeof(*matches));
        char list[256] = "";
        int n;

        if (!matches)
                return EXIT_RUNTIME;
        n = process_tree__match_name(config->name_pattern, matches, CONFIG_MAX_PIDS);
        if (n < 0) {
                log_error("--name: cannot list processes: %s", strerror(-n));
                return EXIT_RUNTIME;
        }
        if (n == 0) {
                log_error("--name %s: no process matches", config->name_pattern);
                return EXIT_TARGET_ERROR;
        }
        if (n > CONFIG_MAX_PIDS || (n > 1 && !config->all_matches)) {
                for (int i = 0, used = 0; i < n && i < CONFIG_MAX_PIDS && used < 200; i++)
                        used += snprintf(list + used, sizeof(list) - (size_t)used, "%s%d (%s)",
                                         i ? ", " : "", (int)matches[i].pid, matches[i].comm);
                log_error("--name %s matches %d processes: %s%s; pick one with --pid, or give "
                          "--all-matches",
                          config->name_pattern, n, list, strlen(list) >= 200 ? ", ..." : "");
                return EXIT_USAGE;
        }
        config->n_pids = (size_t)n;
        for (int i = 0; i < n; i++)
                config->pids[i] = matches[i].pid;
        return 0;
}

/* -- COMMAND: forked now, before any other thread exists; it waits for
 * the tracer to seize it (cli/launch.h).  0 or -1 after an error line. */
static int start_command(struct registry *registry, struct launch *launch)
{
        int r = launch__start(launch, registry->config.command_argv);

        if (r < 0) {
                log_error("cannot start %s: %s", registry->config.command_argv[0], strerror(-r));
                return -1;
        }
        registry->config.pids[0] = registry->command.pid = launch->pid;
        registry->config.n_pids = 1;
        registry->command.go_fd = launch->go_fd;
        launch->go_fd = -1; /* the tracer's now */
        return 0;
}

static enum log_level log_level_for(const struct profd_config *config)
{
        if (config->verbosity >= 2)
                return LOG_LEVEL_DEBUG;
        if (config->verbosity == 1)
                return LOG_LEVEL_INFO;
        return config->watch ? LOG_LEVEL_NOTICE : LOG_LEVEL_WARNING;
}

int main(int argc, char **argv)
{
        static struct config_file startup_file;
        struct profd_config config;
        struct registry registry;
        struct daemon_state daemon = {.argc = argc, .argv = argv, .startup_file = &startup_file};
        struct config_source source = {0};
        struct launch launch = {.go_fd = -1, .error_fd = -1};
        char error[512];
        _cleanup_close_ int signal_fd = -1;
        int status;

        if (!load_config_file(argc, argv, &startup_file, error, sizeof(error))) {
                log_error("%s", error);
                return EXIT_USAGE;
        }
        switch (cli__parse(argc, argv, &source, &config, error, sizeof(error))) {
        case CLI_EXIT_OK:
                return 0;
        case CLI_USAGE_ERROR:
                log_error("%s", error);
                return EXIT_USAGE;
        case CLI_RUN:
                break;
        }
        if (!check_output(&config, error, sizeof(error))) {
                log_error("%s", error);
                return EXIT_USAGE;
        }
        log_set_level(log_level_for(&config));
        if (config.sampler == SAMPLER_PERF && config.command != COMMAND_DUMP &&
            profiled_target__check_perf(&config) < 0)
                return EXIT_USAGE; /* before any target is touched */
        if (config.name_pattern && (status = resolve_name(&config)) != 0)
                return status;
        if (config.watch) {
                log_set_rate_limit(100, 10); /* journald-friendly: no floods */
                daemon.watchdog_usec = sd_notify__watchdog_usec();
        }
        raise_fd_limit();
        /* A privileged daemon must not fetch debug info over the network
         * behind the user's back (libdw honours DEBUGINFOD_URLS). */
        unsetenv("DEBUGINFOD_URLS");
        signal_fd = block_signals(config.command == COMMAND_TOP);
        int r = registry__init(&registry, &config);
        if (r >= 0 && signal_fd < 0)
                r = signal_fd;
        if (r < 0) {
                log_error_errno(r, "cannot initialise");
                registry__release(&registry);
                return EXIT_RUNTIME;
        }
        daemon.export = config.export;
        if (config.command_argv && start_command(&registry, &launch) < 0) {
                registry__release(&registry);
                return EXIT_RUNTIME;
        }
        if (start_exporter(&registry) < 0) {
                registry__release(&registry); /* closes go: the command exits unrun */
                if (launch.pid > 0)
                        (void)launch__wait(&launch, signal_fd);
                launch__release(&launch);
                return EXIT_RUNTIME;
        }
        status = run_command(&registry, signal_fd, &daemon, launch.pid > 0 ? &launch : NULL);
        registry__release(&registry);
        config_file__release(&startup_file);
        return status;
}
