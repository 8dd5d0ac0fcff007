/* progress.c — see progress.h.
 *
 * The line is redrawn with "\r" + text + "erase to end of line" (ESC [ K),
 * which every terminal and terminal multiplexer understands, and is kept
 * under 80 columns so it never wraps (a wrapped line cannot be redrawn in
 * place). */
#include "cli/progress.h"

#include <unistd.h>

#include "engine/run_stats.h"
#include "util/clock.h"

static uint64_t load(const uint64_t *value)
{
        return __atomic_load_n(value, __ATOMIC_RELAXED);
}

static void store(uint64_t *slot, uint64_t value)
{
        __atomic_store_n(slot, value, __ATOMIC_RELAXED);
}

void progress__publish(struct progress_counters *counters, const struct run_stats *stats,
                       uint64_t threads)
{
        store(&counters->samples, stats->samples);
        store(&counters->skipped, stats->skipped);
        store(&counters->ticks, stats->ticks);
        store(&counters->threads, threads);
}

void progress__init(struct progress *progress, FILE *out, double duration_s)
{
        progress->out = out && isatty(fileno(out)) ? out : NULL;
        progress->duration_s = duration_s;
        progress->start_ns = monotonic_ns();
        progress->drawn = false;
}

void progress__draw(struct progress *progress, const struct progress_counters *counters)
{
        double elapsed = (double)(monotonic_ns() - progress->start_ns) / 1e9;
        char total[32] = "";

        if (!progress->out)
                return;
        if (progress->duration_s > 0)
                snprintf(total, sizeof(total), "/%gs", progress->duration_s);
        fprintf(progress->out,
                "\rsplunk-profd: %.1fs%s  samples %llu  threads %llu  skipped %llu"
                "  (Ctrl-C stops)\033[K",
                elapsed, total, (unsigned long long)load(&counters->samples),
                (unsigned long long)load(&counters->threads),
                (unsigned long long)load(&counters->skipped));
        fflush(progress->out);
        progress->drawn = true;
}

void progress__clear(struct progress *progress)
{
        if (!progress->out || !progress->drawn)
                return;
        fputs("\r\033[K", progress->out);
        fflush(progress->out);
        progress->drawn = false;
}
