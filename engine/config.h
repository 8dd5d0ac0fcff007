/* config.h — what one run of splunk-profd was asked to do, after flags and
 * environment have been parsed and validated.  Flags win over the
 * environment; the environment wins over built-in defaults. */
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

struct profd_config {
        enum profd_command command;
        enum output_format format;
        bool format_given;         /* --format was given (else from --output's extension) */
        bool json;                 /* dump: --json */
        bool include_idle;         /* top: count blocked (idle) samples too: --idle */
        bool wall;                 /* record: outputs show wall time, not CPU: --wall */
        const char *thread_filter; /* top: --thread NAME|TID, NULL = all */
        uint64_t max_ticks;        /* stop after this many ticks (dump: 1), 0 = no limit */
        size_t n_pids;
        pid_t pids[CONFIG_MAX_PIDS];
        const char *output;          /* NULL: no file */
        double duration_s;           /* 0: until SIGINT/SIGTERM */
        int64_t interval_ms;         /* sampling period */
        size_t stack_bytes;          /* stack copied per thread-sample */
        size_t max_depth;            /* frames kept per stack */
        int verbosity;               /* -v count */
        int native_mode;             /* enum native_mode (unwind/stack_merge.h): --native */
        struct export_config export; /* Splunk OTLP export (see export_config.h) */
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

enum cli_result {
        CLI_RUN,
        CLI_EXIT_OK,    /* --help or --version was printed */
        CLI_USAGE_ERROR /* `error` holds one line */
};

/* Parses argv (an optional subcommand, then its options) and the
 * SPLUNK_PROFILER_* environment into `config`. */
struct config_source;
enum cli_result cli__parse(int argc, char **argv, const struct config_source *source,
                           struct profd_config *config, char *error, size_t error_size);
/* The value of --config in argv (before the full parse), or NULL. */
const char *cli__config_path(int argc, char **argv);
