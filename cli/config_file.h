/* config_file.h — the optional configuration file (--config FILE): lines
 * of KEY=VALUE with the same names as the environment variables
 * (SPLUNK_PROFILER_*, OTEL_*), '#' comments, blank lines, and optional
 * single or double quotes around a value — the EnvironmentFile= syntax,
 * so one file serves both systemd and --config.
 *
 * Precedence: flag > environment > file > default.  At start the file's
 * entries are merged into the environment (without overwriting), before
 * any thread exists, so every reader sees them.  On SIGHUP the file is
 * read again and looked up through config_source, never setenv(): other
 * threads may be reading the environment. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define CONFIG_FILE_MAX_ENTRIES 256

struct config_file {
        size_t n;
        char *keys[CONFIG_FILE_MAX_ENTRIES];
        char *values[CONFIG_FILE_MAX_ENTRIES];
        bool from_file[CONFIG_FILE_MAX_ENTRIES]; /* set by merge: was not in the env */
};

/* 0, or -errno with a one-line `error`. */
int config_file__read(const char *path, struct config_file *file, char *error, size_t error_size);
const char *config_file__get(const struct config_file *file, const char *key);
/* setenv() for the keys the environment lacks; call before any thread. */
void config_file__merge_into_environment(struct config_file *file);
void config_file__release(struct config_file *file);

/* Where configuration values come from: the environment, and the file. */
struct config_source {
        const struct config_file *startup; /* merged at start (NULL: none) */
        const struct config_file *current; /* re-read on SIGHUP (NULL: use env) */
};

/* The value of `name`: the environment's unless it came from the startup
 * file, in which case the current file's. */
const char *config_source__get(const struct config_source *source, const char *name);
