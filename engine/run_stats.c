/* run_stats.c — see run_stats.h. */
#include "engine/run_stats.h"

void run_stats__add_pause(struct run_stats *stats, uint64_t pause_ns)
{
        uint64_t us = pause_ns / 1000;

        stats->pause_count++;
        if (pause_ns > stats->pause_max_ns)
                stats->pause_max_ns = pause_ns;
        if (us >= PAUSE_BUCKETS)
                stats->pause_overflow++;
        else if (stats->pause_us[us] < UINT32_MAX)
                stats->pause_us[us]++;
}

uint64_t run_stats__pause_percentile_us(const struct run_stats *stats, double p)
{
        uint64_t rank, seen = 0;

        if (stats->pause_count == 0)
                return 0;
        rank = (uint64_t)(p * (double)stats->pause_count);
        if (rank >= stats->pause_count)
                rank = stats->pause_count - 1;
        for (uint64_t us = 0; us < PAUSE_BUCKETS; us++) {
                seen += stats->pause_us[us];
                if (seen > rank)
                        return us;
        }
        return stats->pause_max_ns / 1000;
}
