/* config.h — what one run of splunk-profd was asked to do, once the command
 * line and the environment have been parsed and validated, and the exit
 * statuses.  Flags win over the environment; the environment wins over
 * built-in defaults. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/watch_rules.h"
#include "otlp/export_config.h"

#define CONFIG_MAX_PIDS 1024

/* Exit statuses, documented in --help, README.md and splunk-profd(1). */
#define EXIT_RUNTIME      1 /* e.g. the output cannot be written */
#define EXIT_USAGE        2 /* bad flag, environment value or subcommand */
#define EXIT_TARGET_ERROR 3 /* a target cannot be profiled */

/* The subcommand: `record` (also the default with no subcommand), `dump`
 * (every thread's stack once) or `top` (live hottest functions). */
enum profd_command {
        COMMAND_RECORD,
        COMMAND_DUMP,
        COMMAND_TOP,
};

/* --output's format, from --format or the file name's extension. */
enum output_format {
        OUTPUT_PPROF,      /* .pb.gz: gzip pprof (default for unknown extensions) */
        OUTPUT_COLLAPSED,  /* .txt: "root;...;leaf count" lines (flamegraph.pl) */
        OUTPUT_SPEEDSCOPE, /* .json: speedscope file format */
        OUTPUT_SVG,        /* .svg: self-contained interactive flame graph */
};

/* --sampler: how running threads of a native process are sampled. */
enum sampler_kind {
        SAMPLER_AUTO,   /* perf where the kernel allows it, else ptrace stops */
        SAMPLER_PERF,   /* perf_event_open; refused is an error */
        SAMPLER_PTRACE, /* PTRACE_INTERRUPT stops, as for Python targets */
};

struct profd_config {
        enum profd_command command;
        enum output_format format;
        bool format_given;         /* --format was given (else from --output's extension) */
        bool json;                 /* dump: --json */
        bool include_idle;         /* top: count blocked (idle) samples too: --idle */
        bool wall;                 /* record: outputs show wall time, not CPU: --wall */
        const char *thread_filter; /* top: --thread NAME|TID, NULL = all */
        uint64_t max_ticks;        /* stop after this many ticks (dump: 1), 0 = no limit */
        /* dump --wait SEC (only with -- COMMAND): the first tick comes SEC
         * after the start instead of one interval after it; 0: no wait. */
        double first_tick_delay_s;
        size_t n_pids;
        pid_t pids[CONFIG_MAX_PIDS];
        /* `-- COMMAND [ARGS...]`: started by cli/launch.c, whose pid then
         * becomes pids[0]; NULL: profile running processes. */
        char **command_argv;
        /* --name PATTERN: resolved into pids by engine/name_match.c before
         * the run; --all-matches takes every match instead of failing. */
        const char *name_pattern;
        bool all_matches;
        bool subprocesses;           /* --subprocesses: children are targets of their own */
        bool threads;                /* --threads: collapsed stacks start with the thread */
        const char *output;          /* NULL: no file */
        double duration_s;           /* 0: until SIGINT/SIGTERM */
        int64_t interval_ms;         /* sampling period */
        size_t stack_bytes;          /* stack copied per thread-sample */
        size_t max_depth;            /* frames kept per stack */
        int verbosity;               /* -v count */
        int native_mode;             /* enum native_mode (unwind/stack_merge.h): --native */
        enum sampler_kind sampler;   /* --sampler (dump: always ptrace) */
        struct export_config export; /* Splunk OTLP export (see export_config.h) */
        /* SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS: keep the samples of
         * threads the span-context segment marks as the SDK's own. */
        bool include_internal_stacks;
        /* --watch (daemon mode, engine/watch.h) */
        bool watch;
        const char *config_path;  /* --config FILE, NULL: none */
        double health_interval_s; /* health line period; 0 = never */
        struct watch_rules rules;
};

/* What a SIGHUP may change: handed from main to the tracer thread. */
struct watch_settings {
        int64_t interval_ms;
        double health_interval_s;
        struct watch_rules rules;
};
