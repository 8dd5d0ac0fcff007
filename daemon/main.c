/* main.c — `splunk-profd --pid N [--output FILE]`: parse, start the
 * exporter thread (when exporting to Splunk) and the tracer thread, wait
 * for the tracer or for SIGINT/SIGTERM, write the profile, let the exporter
 * flush within a deadline, summarize.
 *
 * Three threads at most: main (signals, file output), the tracer (every
 * ptrace call, sampling, record encoding) and the exporter (gRPC only, fed
 * by a bounded queue, so a slow or absent collector never delays a tick).
 *
 * The main thread never touches a tracee.  It owns the signals: SIGINT,
 * SIGTERM and SIGHUP are read from a signalfd (so no handler ever runs at a
 * bad moment), and SIGCHLD is blocked here and read by the tracer. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/registry.h"
#include "daemon/sampler.h"
#include "daemon/tracer.h"
#include "export/exporter.h"
#include "export/profile_builder.h"
#include "export/profile_file.h"
#include "symbolize/symbolizer.h"
#include "util/cleanup.h"
#include "util/log.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2
/* On shutdown, queued records get this long to reach the collector. */
#define EXPORT_SHUTDOWN_DEADLINE_MS 5000

/* Per-thread /proc files are kept open: allow as many as the hard limit. */
static void raise_fd_limit(void)
{
        struct rlimit limit;

        if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
                limit.rlim_cur = limit.rlim_max;
                (void)setrlimit(RLIMIT_NOFILE, &limit);
        }
}

static int block_signals(void)
{
        sigset_t mask;

        sigemptyset(&mask);
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
        struct profile_builder_options options = {
            .n_sample_types = 1,
            .sample_type = {"samples"},
            .sample_unit = {"count"},
            .period_type = "cpu",
            .period_unit = "nanoseconds",
            .period = config->interval_ms * 1000000,
        };

        memset(registry, 0, sizeof(*registry));
        registry->config = *config;
        registry->sigchld_fd = -1;
        registry->stop_fd = eventfd(0, EFD_CLOEXEC);
        registry->done_fd = eventfd(0, EFD_CLOEXEC);
        registry->symbolizer = symbolizer__new();
        registry->builder = profile_builder__new(&options);
        registry->recorder.builder = registry->builder;
        registry->recorder.period_ms = config->interval_ms;
        if (registry->stop_fd < 0 || registry->done_fd < 0 || !registry->symbolizer ||
            !registry->builder)
                return -ENOMEM;
        return 0;
}

static void registry__release(struct registry *registry)
{
        for (size_t i = 0; i < registry->targets.n_targets; i++)
                sampler__release_target(registry->targets.targets[i]);
        target_set__free(&registry->targets);
        profile_builder__free(registry->builder);
        symbolizer__free(registry->symbolizer);
        exporter__free(registry->exporter);
        if (registry->sigchld_fd >= 0)
                close(registry->sigchld_fd);
        if (registry->stop_fd >= 0)
                close(registry->stop_fd);
        if (registry->done_fd >= 0)
                close(registry->done_fd);
}

/* Waits until the tracer finishes, forwarding SIGINT/SIGTERM as a stop
 * request.  A second signal is not needed: the tracer stops within one
 * poll period. */
static void wait_for_tracer(struct registry *registry, int signal_fd)
{
        struct pollfd fds[2] = {
            {.fd = signal_fd, .events = POLLIN},
            {.fd = registry->done_fd, .events = POLLIN},
        };
        uint64_t value, one = 1;
        struct signalfd_siginfo info;

        for (;;) {
                if (poll(fds, 2, -1) < 0 && errno != EINTR)
                        return;
                if (fds[1].revents & POLLIN) {
                        if (read(registry->done_fd, &value, sizeof(value)) == sizeof(value) &&
                            value >= 2)
                                return;
                }
                if ((fds[0].revents & POLLIN) &&
                    read(signal_fd, &info, sizeof(info)) == sizeof(info) &&
                    info.ssi_signo != SIGHUP) {
                        log_info("signal %u: stopping", info.ssi_signo);
                        (void)!write(registry->stop_fd, &one, sizeof(one));
                }
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
                "pause_p50_us=%llu pause_p99_us=%llu errors=%llu stopped=%llu blocked=%llu "
                "reused=%llu restopped=%llu merge_failed=%llu signals_forwarded=%llu "
                "eintr_repaired=%llu cpu_ms=%llu%s\n",
                registry->targets.n_targets, (unsigned long long)s->max_threads,
                (unsigned long long)s->samples, (unsigned long long)s->skipped,
                (unsigned long long)run_stats__pause_percentile_us(s, 0.50),
                (unsigned long long)run_stats__pause_percentile_us(s, 0.99),
                (unsigned long long)s->errors, (unsigned long long)s->samples_stopped,
                (unsigned long long)s->samples_blocked, (unsigned long long)s->samples_reused,
                (unsigned long long)s->samples_restopped, (unsigned long long)s->merge_failed,
                (unsigned long long)registry->events.signals_reinjected,
                (unsigned long long)registry->events.eintr_repaired, (unsigned long long)cpu_ms(),
                export_summary);
}

static int write_output(struct registry *registry)
{
        int r;

        if (!registry->config.output)
                return 0;
        profile_builder__set_duration(registry->builder,
                                      (int64_t)(registry->end_ns - registry->start_ns));
        r = profile_file__write_pprof(registry->builder, registry->config.output);
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

static int run(struct registry *registry, int signal_fd)
{
        pthread_t tracer;
        int status;

        if (pthread_create(&tracer, NULL, tracer__main, registry) != 0) {
                log_error("cannot start the tracer thread");
                return EXIT_RUNTIME;
        }
        wait_for_tracer(registry, signal_fd);
        pthread_join(tracer, NULL);
        if (registry->exporter)
                exporter__stop(registry->exporter,
                               registry->attach_error ? 0 : EXPORT_SHUTDOWN_DEADLINE_MS);
        if (registry->attach_error) {
                log_error("%s", registry->attach_why);
                return registry->attach_exit_code;
        }
        status = write_output(registry);
        print_summary(registry);
        return status;
}

int main(int argc, char **argv)
{
        struct profd_config config;
        struct registry registry;
        char error[512];
        _cleanup_close_ int signal_fd = -1;
        int status;

        switch (cli__parse(argc, argv, &config, error, sizeof(error))) {
        case CLI_EXIT_OK:
                return 0;
        case CLI_USAGE_ERROR:
                log_error("%s", error);
                return EXIT_USAGE;
        case CLI_RUN:
                break;
        }
        log_set_level(config.verbosity >= 2   ? LOG_LEVEL_DEBUG
                      : config.verbosity == 1 ? LOG_LEVEL_INFO
                                              : LOG_LEVEL_WARNING);
        raise_fd_limit();
        /* A privileged daemon must not fetch debug info over the network
         * behind the user's back (libdw honours DEBUGINFOD_URLS). */
        unsetenv("DEBUGINFOD_URLS");
        signal_fd = block_signals();
        if (registry__init(&registry, &config) < 0 || signal_fd < 0) {
                log_error("cannot initialise: %s", strerror(errno ? errno : ENOMEM));
                registry__release(&registry);
                return EXIT_RUNTIME;
        }
        if (start_exporter(&registry) < 0) {
                registry__release(&registry);
                return EXIT_RUNTIME;
        }
        status = run(&registry, signal_fd);
        registry__release(&registry);
        return status;
}
