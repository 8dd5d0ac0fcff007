/* log.c — see log.h.  The level threshold and the rate limiter are the
 * process-wide state outside the registry (stderr is process-wide too):
 * both are set once from main before any thread starts; the limiter's
 * counters are guarded by a mutex because every thread may log.  Every
 * message is one line: control bytes in it are escaped. */
#include "util/log.h"

#include <pthread.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level log_threshold = LOG_LEVEL_WARNING;

static struct {
        pthread_mutex_t lock;
        unsigned int burst, window_s;
        time_t window_start;
        unsigned int lines, suppressed;
} limiter = {.lock = PTHREAD_MUTEX_INITIALIZER};

void log_set_level(enum log_level level)
{
        log_threshold = level;
}

void log_set_rate_limit(unsigned int burst, unsigned int window_s)
{
        limiter.burst = burst;
        limiter.window_s = window_s;
}

/* true: print this line.  *suppressed: lines dropped in the past window. */
static bool limiter__admit(enum log_level level, unsigned int *suppressed)
{
        struct timespec now;
        bool admit = true;

        *suppressed = 0;
        if (limiter.burst == 0 || level == LOG_LEVEL_ERROR)
                return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        pthread_mutex_lock(&limiter.lock);
        if (now.tv_sec - limiter.window_start >= (time_t)limiter.window_s) {
                *suppressed = limiter.suppressed;
                limiter.window_start = now.tv_sec;
                limiter.lines = limiter.suppressed = 0;
        }
        if (limiter.lines >= limiter.burst) {
                limiter.suppressed++;
                admit = false;
        } else {
                limiter.lines++;
        }
        pthread_mutex_unlock(&limiter.lock);
        return admit;
}

/* Control bytes (a newline in a path, an escape sequence from a config
 * file or from gRPC) become \xNN, so that a message is always one line
 * and cannot rewrite the terminal.  Tab stays. */
static void log__escape(const char *in, char *out, size_t size)
{
        size_t n = 0;

        for (; *in && n + 5 < size; in++) {
                unsigned char c = (unsigned char)*in;
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        n += (size_t)snprintf(out + n, size - n, "\\x%02x", c);
                else
                        out[n++] = (char)c;
        }
        out[n] = '\0';
}

/* Formats one line; `r` != 0 appends ": strerror(|r|)". */
static void log__emit(enum log_level level, int r, const char *fmt, va_list ap)
{
        static const char *const names[] = {"error", "warning", "notice", "info", "debug"};
        unsigned int suppressed;
        char raw[1024], line[4 * sizeof(raw)];

        if (level > log_threshold || !limiter__admit(level, &suppressed))
                return;
        if (suppressed)
                fprintf(stderr, "splunk-profd: warning: %u log lines suppressed (rate limit)\n",
                        suppressed);
        vsnprintf(raw, sizeof(raw), fmt, ap);
        log__escape(raw, line, sizeof(line));
        if (r)
                fprintf(stderr, "splunk-profd: %s: %s: %s\n", names[level], line,
                        strerror(r < 0 ? -r : r));
        else
                fprintf(stderr, "splunk-profd: %s: %s\n", names[level], line);
}

void log_message(enum log_level level, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        log__emit(level, 0, fmt, ap);
        va_end(ap);
}

int log_message_errno(enum log_level level, int r, const char *fmt, ...)
{
        int saved = errno;
        va_list ap;

        va_start(ap, fmt);
        log__emit(level, r, fmt, ap);
        va_end(ap);
        errno = saved;
        return r < 0 ? r : -r;
}
