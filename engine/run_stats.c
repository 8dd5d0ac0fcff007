/* run_stats.c — see run_stats.h. */
#include "engine/run_stats.h"

static void pause_histogram__add(struct pause_histogram *h, uint64_t ns)
{
        uint64_t us = ns / 1000;

        h->count++;
        if (ns > h->max_ns)
                h->max_ns = ns;
        if (us >= PAUSE_BUCKETS)
                h->overflow++;
        else if (h->us[us] < UINT32_MAX)
                h->us[us]++;
}

void run_stats__add_pause(struct run_stats *stats, uint64_t pause_ns, uint64_t held_ns,
                          uint64_t waited_ns)
{
        pause_histogram__add(&stats->pause, pause_ns);
        pause_histogram__add(&stats->held, held_ns);
        pause_histogram__add(&stats->waited, waited_ns);
}

uint64_t pause_histogram__percentile_us(const struct pause_histogram *h, double p)
{
        uint64_t rank, seen = 0;

        if (h->count == 0)
                return 0;
        rank = (uint64_t)(p * (double)h->count);
        if (rank >= h->count)
                rank = h->count - 1;
        for (uint64_t us = 0; us < PAUSE_BUCKETS; us++) {
                seen += h->us[us];
                if (seen > rank)
                        return us;
        }
        return h->max_ns / 1000;
}

uint64_t run_stats__pause_percentile_us(const struct run_stats *stats, double p)
{
        return pause_histogram__percentile_us(&stats->pause, p);
}
