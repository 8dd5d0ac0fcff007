/* progress.c — see progress.h.
 *
 * The line is redrawn with "\r" + text + "erase to end of line" (ESC [ K),
 * which every terminal and terminal multiplexer understands, and is kept
 * under 80 columns so it never wraps (a wrapped line cannot be redrawn in
 * place). */
#include "cli/progress.h"

#include <unistd.h>

#include "engine/run_status.h"
#include "util/clock.h"

void progress__init(struct progress *progress, FILE *out, double duration_s)
{
        progress->out = out && isatty(fileno(out)) ? out : NULL;
        progress->duration_s = duration_s;
        progress->start_ns = monotonic_ns();
        progress->drawn = false;
}

void progress__draw(struct progress *progress, const struct run_status *status)
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
                elapsed, total, (unsigned long long)status->samples,
                (unsigned long long)status->threads, (unsigned long long)status->skipped);
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
