/* cli.h — the command line: turns argv (an optional subcommand, then its
 * options) and the SPLUNK_PROFILER_* environment (or the --config file,
 * cli/config_file.h) into a validated struct profd_config.  engine/ only
 * ever sees the config, never the command line. */
#pragma once

#include <stddef.h>

#include "engine/config.h"

struct config_source;

enum cli_result {
        CLI_RUN,
        CLI_EXIT_OK,    /* --help or --version was printed */
        CLI_USAGE_ERROR /* `error` holds one line */
};

/* Parses argv and the configuration from `source` (NULL: the environment)
 * into `config`. */
enum cli_result cli__parse(int argc, char **argv, const struct config_source *source,
                           struct profd_config *config, char *error, size_t error_size);
/* The value of --config in argv (before the full parse), or NULL. */
const char *cli__config_path(int argc, char **argv);
/* The long name of the i-th option of the table, its short letter (0:
 * none) in `letter`; NULL past the last.  For the man-page check. */
const char *cli__option_name(size_t i, char *letter);
