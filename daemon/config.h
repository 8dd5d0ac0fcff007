/* config.h — what one run of splunk-profd was asked to do, after flags and
 * environment have been parsed and validated.  Flags win over the
 * environment; the environment wins over built-in defaults. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "export/export_config.h"

#define CONFIG_MAX_PIDS 1024

struct profd_config {
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
};

enum cli_result {
        CLI_RUN,
        CLI_EXIT_OK,    /* --help or --version was printed */
        CLI_USAGE_ERROR /* `error` holds one line */
};

/* Parses argv and the SPLUNK_PROFILER_* environment into `config`. */
enum cli_result cli__parse(int argc, char **argv, struct profd_config *config, char *error,
                           size_t error_size);
