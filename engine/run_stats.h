/* run_stats.h — counters for the end-of-run summary and the health line:
 * samples taken, reused and skipped, and the distribution of the pause
 * each interrupted thread saw (interrupt to resume), as a histogram with
 * 1 µs buckets up to 10 ms, so p50/p99 cost no per-sample memory. */
#pragma once

#include <stdint.h>

#define PAUSE_BUCKETS 10000

struct run_stats {
        uint64_t ticks;
        uint64_t samples;           /* thread-samples recorded */
        uint64_t samples_stopped;   /* of which taken by interrupting */
        uint64_t samples_blocked;   /* of which taken without stopping */
        uint64_t samples_reused;    /* of which idle threads' previous stack */
        uint64_t samples_restopped; /* blocked, but stopped to get registers */
        uint64_t skipped;           /* thread-samples that could not be taken */
        uint64_t errors;
        uint64_t merge_failed;        /* Python samples whose native/Python merge did not line up */
        uint64_t max_threads;         /* most threads alive at once, all targets */
        uint64_t capture_bytes_freed; /* idle threads' capture buffers given back */
        /* after the stops: blocked copies, unwinding, symbolizing, recording */
        uint64_t unwind_ns;
        uint64_t pause_count;
        uint64_t pause_overflow; /* pauses of 10 ms or more */
        uint64_t pause_max_ns;
        uint32_t pause_us[PAUSE_BUCKETS];
};

void run_stats__add_pause(struct run_stats *stats, uint64_t pause_ns);

/* Pause percentile in µs (0 < p < 1); 0 when there were no pauses. */
uint64_t run_stats__pause_percentile_us(const struct run_stats *stats, double p);
