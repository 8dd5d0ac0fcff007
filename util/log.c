/* log.c — see log.h.  The level threshold is the one piece of process-wide
 * state outside the registry: it is set once from the CLI before any thread
 * starts and only read afterwards. */
#include "util/log.h"

#include <stdio.h>

static enum log_level log_threshold = LOG_LEVEL_WARNING;

void log_set_level(enum log_level level)
{
        log_threshold = level;
}

void log_message(enum log_level level, const char *fmt, ...)
{
        static const char *const names[] = {"error", "warning", "info", "debug"};
        char line[1024];
        va_list ap;

        if (level > log_threshold)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        fprintf(stderr, "splunk-profd: %s: %s\n", names[level], line);
}
