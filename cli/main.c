/* main.c — `splunk-profd [record|dump|top] --pid N ...`: parse, start the
 * exporter thread (when exporting to Splunk) and the tracer thread, wait
 * for the tracer or for SIGINT/SIGTERM, then finish the subcommand:
 *
 *   record  write the profile (pprof, collapsed, speedscope or SVG, all from
 *           the one profile builder) and a summary line;
 *   dump    the tracer stops after one tick; print what the dump sink kept;
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
#include "engine/config.h"
#include "cli/config_file.h"
#include "cli/progress.h"
#include "engine/registry.h"
#include "engine/run_status.h"
#include "engine/profiled_target.h"
#include "engine/tracer.h"
#include "engine/watch.h"
#include "render/collapsed.h"
#include "otlp/exporter.h"
#include "render/flamegraph_svg.h"
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
        signal(SIGPIPE, SIG_IGN);
        if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
                return -1;
        sigdelset(&mask, SIGCHLD);
        return signalfd(-1, &mask, SFD_CLOEXEC);
}

static int registry__init(struct registry *registry, const struct profd_config *config)
{
        /* sample_recorder.h gives every sample these three values. */
        struct profile_builder_options options = {
            .n_sample_types = 3,
            .sample_type = {"samples", "cpu", "wall"},
            .sample_unit = {"count", "nanoseconds", "nanoseconds"},
            .period_type = "cpu",
            .period_unit = "nanoseconds",
            .period = config->interval_ms * 1000000,
            .default_sample_type = config->wall ? 2 : 1,
        };

        memset(registry, 0, sizeof(*registry));
        registry->config = *config;
        registry->include_internal_stacks =
            !strcasecmp(getenv("SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS") ?: "", "true");
        registry->sigchld_fd = -1;
        int r = mailbox__init(&registry->status, sizeof(struct run_status));
        if (r < 0)
                return r;
        registry->reload_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&registry->reload_lock, NULL);
        if (config->watch && !(registry->watch = watch__new()))
                return -ENOMEM;
        registry->stop_fd = eventfd(0, EFD_CLOEXEC);
        registry->done_fd = eventfd(0, EFD_CLOEXEC);
        registry->symbolizer = symbolizer__new();
        /* Only a run that writes --output builds a profile: dump and top
         * read stacks through their sink, and a run that only exports (the
         * daemon as the unit runs it) would otherwise keep every sample it
         * ever took. */
        bool build_profile = config->command == COMMAND_RECORD && config->output;
        if (build_profile)
                registry->builder = profile_builder__new(&options);
        registry->recorder.builder = registry->builder;
        registry->recorder.period_ms = config->interval_ms;
        if (registry->stop_fd < 0 || registry->done_fd < 0 || registry->reload_fd < 0 ||
            !registry->symbolizer || (build_profile && !registry->builder) ||
            py_walk_scratch__init(&registry->py_scratch) < 0)
                return -ENOMEM;
        return 0;
}

static void registry__release(struct registry *registry)
{
        for (size_t i = 0; i < registry->targets.n_targets; i++)
                profiled_target__free(registry->targets.targets[i]);
        target_set__free(&registry->targets);
        profile_builder__free(registry->builder);
        symbolizer__free(registry->symbolizer);
        py_walk_scratch__release(&registry->py_scratch);
        exporter__free(registry->exporter);
        watch__free(registry->watch);
        mailbox__release(&registry->status);
        if (registry->reload_fd >= 0)
                close(registry->reload_fd);
        if (registry->sigchld_fd >= 0)
                close(registry->sigchld_fd);
        if (registry->stop_fd >= 0)
                close(registry->stop_fd);
        if (registry->done_fd >= 0)
                close(registry->done_fd);
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

static void on_signal(struct registry *registry, struct daemon_state *daemon,
                      const struct signalfd_siginfo *info)
{
        uint64_t one = 1;

        if (info->ssi_signo == SIGHUP) {
                if (daemon) {
                        (void)sd_notify__send("RELOADING=1");
                        reload(registry, daemon);
                        (void)sd_notify__send("READY=1");
                }
                return;
        }
        log_info("signal %u: stopping", info->ssi_signo);
        if (daemon)
                (void)sd_notify__send("STOPPING=1");
        (void)!write(registry->stop_fd, &one, sizeof(one));
}

/* Waits until the tracer finishes, forwarding SIGINT/SIGTERM as a stop
 * request.  A second signal is not needed: the tracer stops within one
 * poll period.  In --watch mode (`daemon` set) it also tells systemd
 * READY=1 once the tracer runs, feeds the watchdog, and reloads on SIGHUP. */
static void wait_for_tracer(struct registry *registry, int signal_fd, struct progress *progress,
                            struct daemon_state *daemon)
{
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
                        return;
                if (ready == 0 && progress->out) {
                        (void)mailbox__receive(&registry->status, &status);
                        progress__draw(progress, &status);
                }
                feed_watchdog(registry, daemon);
                if (fds[1].revents & POLLIN) {
                        if (read(registry->done_fd, &value, sizeof(value)) == sizeof(value) &&
                            value >= 2)
                                return;
                        if (daemon && value == 1)
                                (void)sd_notify__send("READY=1\nSTATUS=watching");
                }
                if ((fds[0].revents & POLLIN) &&
                    read(signal_fd, &info, sizeof(info)) == sizeof(info))
                        on_signal(registry, daemon, &info);
        }
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
                "reused=%llu restopped=%llu merge_failed=%llu signals_forwarded=%llu "
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
                (unsigned long long)s->merge_failed,
                (unsigned long long)registry->events.signals_reinjected,
                (unsigned long long)registry->events.eintr_repaired,
                (unsigned long long)registry->events.interrupts_consumed,
                (unsigned long long)cpu_ms(), export_summary);
}

/* One profile builder, four renderings of it. */
static int write_profile(struct profile_builder *builder, enum output_format format,
                         const char *path)
{
        switch (format) {
        case OUTPUT_COLLAPSED:
                return collapsed__write(builder, path);
        case OUTPUT_SPEEDSCOPE:
                return speedscope__write(builder, path);
        case OUTPUT_SVG:
                return flamegraph_svg__write(builder, path);
        case OUTPUT_PPROF:
                break;
        }
        return profile_file__write_pprof(builder, path);
}

static int write_output(struct registry *registry)
{
        int r;

        if (!registry->config.output)
                return 0;
        profile_builder__set_duration(registry->builder,
                                      (int64_t)(registry->end_ns - registry->start_ns));
        r = write_profile(registry->builder, registry->config.format, registry->config.output);
        if (r < 0) {
                log_error("cannot write %s: %s", registry->config.output, strerror(-r));
                return EXIT_RUNTIME;
        }
        log_info("wrote %zu samples to %s", profile_builder__sample_count(registry->builder),
                 registry->config.output);
        return 0;
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
                return -1;
        }
        if (exporter__start(registry->exporter) < 0) {
                log_error("export: cannot start the exporter thread");
                return -1;
        }
        log_info("exporting to %s (%s)", registry->config.export.endpoint,
                 registry->config.export.tls ? "TLS" : "plaintext");
        return 0;
}

/* record and dump: the tracer runs until the duration, the single dump
 * tick, the last target's exit or a signal; then the command finishes. */
static int run(struct registry *registry, int signal_fd, struct cmd_dump *dump,
               struct daemon_state *daemon)
{
        struct progress progress;
        pthread_t tracer;
        int status;

        progress__init(&progress, dump || daemon ? NULL : stderr, registry->config.duration_s);
        if (pthread_create(&tracer, NULL, tracer__main, registry) != 0) {
                log_error("cannot start the tracer thread");
                return EXIT_RUNTIME;
        }
        wait_for_tracer(registry, signal_fd, &progress, daemon);
        pthread_join(tracer, NULL);
        progress__clear(&progress);
        if (registry->exporter)
                exporter__stop(registry->exporter,
                               registry->attach_error ? 0 : EXPORT_SHUTDOWN_DEADLINE_MS);
        if (registry->attach_error) {
                log_error("%s", registry->attach_why);
                return registry->attach_exit_code;
        }
        if (dump)
                return cmd_dump__print(dump, stdout);
        status = write_output(registry);
        print_summary(registry);
        return status;
}

static int run_command(struct registry *registry, int signal_fd, struct daemon_state *daemon)
{
        _cleanup_(cmd_dump__freep) struct cmd_dump *dump = NULL;

        switch (registry->config.command) {
        case COMMAND_TOP:
                return cmd_top__run(registry, signal_fd);
        case COMMAND_DUMP:
                dump = cmd_dump__new(registry->config.json);
                if (!dump) {
                        log_error("out of memory");
                        return EXIT_RUNTIME;
                }
                registry->sink = cmd_dump__sink(dump);
                return run(registry, signal_fd, dump, NULL);
        case COMMAND_RECORD:
                break;
        }
        return run(registry, signal_fd, NULL, registry->config.watch ? daemon : NULL);
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
        log_set_level(log_level_for(&config));
        if (config.watch) {
                log_set_rate_limit(100, 10); /* journald-friendly: no floods */
                daemon.watchdog_usec = sd_notify__watchdog_usec();
        }
        raise_fd_limit();
        /* A privileged daemon must not fetch debug info over the network
         * behind the user's back (libdw honours DEBUGINFOD_URLS). */
        unsetenv("DEBUGINFOD_URLS");
        signal_fd = block_signals(config.command == COMMAND_TOP);
        if (registry__init(&registry, &config) < 0 || signal_fd < 0) {
                log_error("cannot initialise: %s", strerror(errno ? errno : ENOMEM));
                registry__release(&registry);
                return EXIT_RUNTIME;
        }
        daemon.export = config.export;
        if (start_exporter(&registry) < 0) {
                registry__release(&registry);
                return EXIT_RUNTIME;
        }
        status = run_command(&registry, signal_fd, &daemon);
        registry__release(&registry);
        config_file__release(&startup_file);
        return status;
}
