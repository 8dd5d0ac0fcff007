/* registry.h — the one piece of run-wide state, handed down by pointer:
 * config, targets, caches, the profile being built and the counters.
 *
 * Ownership by thread: the tracer thread owns everything below `tracer
 * only` until it exits; the main thread reads it only after joining. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "attach/ptrace_events.h"
#include "attach/target_set.h"
#include "context/context_reader.h"
#include "engine/config.h"
#include "engine/run_stats.h"
#include "engine/sample_sink.h"
#include "util/mailbox.h"
#include "pprof/sample_recorder.h"
#include "python/py_binary.h"
#include "python/py_frame.h"
#include "symbolize/maps_reader.h"

struct symbolizer;
struct profile_builder;
struct address_space;
struct native_unwinder;
struct py_process;
struct otlp_target;
struct exporter;
struct watch;

/* Whether the tracer polls for its stops instead of sleeping (sampler.c):
 * only with a CPU to spare, and not while polls keep failing. */
struct spin_policy {
        bool allowed;     /* more than one CPU in the tracer's affinity */
        unsigned skip;    /* ticks left without polling */
        unsigned backoff; /* last skip given, doubled on each failed poll */
};

/* When the tracer last looked for ptrace events, and what it has done
 * since, by label (event_pump__busy): an answer that comes late is logged
 * (-vv) with the tracer's CPU time meanwhile and the wall time per label. */
#define EVENT_LAG_PARTS 8
struct event_lag_part {
        const char *label; /* static string; NULL: idle */
        uint64_t wall_ns;
};
struct event_lag {
        uint64_t checked_ns;      /* CLOCK_MONOTONIC of the last look */
        uint64_t cpu_at_check_ns; /* tracer thread CPU time then */
        uint64_t mark_ns;         /* when `label` began, or the last look */
        const char *label;        /* what the tracer does now; NULL: idle */
        struct event_lag_part parts[EVENT_LAG_PARTS];
        size_t n_parts;
};

struct registry {
        struct profd_config config;
        int stop_fd;          /* eventfd: main asks the tracer to stop */
        int done_fd;          /* eventfd: the tracer is attached (1) or finished (2) */
        int attach_error;     /* 0, or -errno of the first failed attach */
        int attach_exit_code; /* exit status to use for attach_error */
        char attach_why[256];
        struct exporter *exporter; /* NULL: no export; thread-safe submit */
        /* SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS=true: keep SDK threads' samples. */
        bool include_internal_stacks;
        struct mailbox status;   /* tracer -> main: struct run_status (run_status.h) */
        struct sample_sink sink; /* dump/top: per-sample consumer (sample_sink.h) */
        /* --watch: SIGHUP settings, queued by main under reload_lock */
        int reload_fd; /* eventfd: main -> tracer, settings pending */
        pthread_mutex_t reload_lock;
        bool reload_pending;
        struct watch_settings reload;
        _Atomic uint64_t heartbeat; /* tracer loop iterations (watchdog) */
        /* Set by main before it starts a tracer again after a job-control
         * suspension: targets that exited meanwhile are skipped, the run's
         * start time is kept. */
        bool resuming;
        /* -- COMMAND (cli/launch.c started it, stopped before its exec):
         * main sets pid and go_fd before the first tracer starts; the
         * tracer seizes the child, writes one byte to go_fd (the child then
         * execs) and closes it (-1).  The child's exit status reaches the
         * tracer's waitpid, which keeps it in exited/status for main. */
        struct {
                pid_t pid; /* 0: no command */
                int go_fd;
                bool exited;
                int status; /* wait status, once exited */
        } command;
        /* tracer only */
        int sigchld_fd;
        const struct ptrace_event_handlers *event_handlers; /* built by tracer.c, static */
        struct target_set targets;
        struct watch *watch; /* NULL unless --watch */
        struct symbolizer *symbolizer;
        /* Reads targets' maps off this thread while it runs (tracer.c starts
         * and stops it); serials tell a target's latest request. */
        struct maps_reader maps_reader;
        uint64_t maps_serial;
        struct py_walk_scratch py_scratch; /* every Python walk's scratch */
        struct py_binaries py_binaries;    /* CPython binaries read, by file */
        struct profile_builder *builder;   /* NULL: not recording a profile (dump, top) */
        struct sample_recorder recorder;
        struct run_stats stats;
        bool taking_stops;       /* a tick is waiting for its interrupt stops (sampler.c) */
        struct spin_policy spin; /* polling for stops (sampler.c) */
        struct ptrace_event_counts events;
        struct event_lag event_lag; /* event_pump.c */
        uint64_t start_ns, end_ns;  /* CLOCK_MONOTONIC */
        uint64_t start_realtime_ns;
        uint64_t export_encode_ns; /* time spent encoding Splunk records */
};
