/* log.h — one-line, level-prefixed messages on stderr.
 *
 * Lines look like "splunk-profd: warning: ..." so that a shell user and
 * journald both read them; the level word is what journald filters on.
 * A long-running daemon turns on rate limiting (log_set_rate_limit): past
 * `burst` lines in a window the rest are counted, and one line says how
 * many were suppressed.  Errors are never suppressed.
 *
 * The project's one error convention (systemd's): a function that can fail
 * returns 0 (or a count, or an id) on success and -errno on failure; one
 * that hands out an object returns it, or NULL with errno set; a yes/no
 * question returns bool and cannot fail.  `return log_warning_errno(r,
 * "cannot read %s", path);` logs "...: <strerror(r)>" and returns -|r|, so
 * that reporting and propagating a failure is one statement.  errno is
 * left as it was. */
#pragma once

#include <stdarg.h>

enum log_level {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_NOTICE, /* daemon health lines */
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG
};

void log_set_level(enum log_level level);
/* At most `burst` non-error lines per `window_s` seconds; 0 turns it off. */
void log_set_rate_limit(unsigned int burst, unsigned int window_s);
void log_message(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs with ": strerror(|r|)" appended (nothing when r == 0); returns -|r|. */
int log_message_errno(enum log_level level, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(...)   log_message(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_message(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...)  log_message(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...)    log_message(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...)   log_message(LOG_LEVEL_DEBUG, __VA_ARGS__)

#define log_error_errno(r, ...)   log_message_errno(LOG_LEVEL_ERROR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_message_errno(LOG_LEVEL_WARNING, (r), __VA_ARGS__)
#define log_notice_errno(r, ...)  log_message_errno(LOG_LEVEL_NOTICE, (r), __VA_ARGS__)
#define log_info_errno(r, ...)    log_message_errno(LOG_LEVEL_INFO, (r), __VA_ARGS__)
#define log_debug_errno(r, ...)   log_message_errno(LOG_LEVEL_DEBUG, (r), __VA_ARGS__)
