/* run_stats.h — counters for the end-of-run summary and the health line:
 * ticks and thread-samples asked for and taken, samples by state, the CPU
 * time charged, and the distribution of the pause each interrupted thread
 * saw, in two parts (waited for the stop, held by us) and in all, as
 * histograms with 1 µs buckets up to 10 ms, so percentiles cost no
 * per-sample memory. */
#pragma once

#include <stdint.h>

#define PAUSE_BUCKETS 10000

struct pause_histogram {
        uint64_t count;
        uint64_t overflow; /* pauses of 10 ms or more */
        uint64_t max_ns;
        uint32_t us[PAUSE_BUCKETS];
};

struct run_stats {
        uint64_t ticks;                /* ticks taken */
        uint64_t ticks_missed;         /* ticks of the grid skipped: the tracer fell behind */
        uint64_t thread_samples_asked; /* threads alive at each tick taken, and missed */
        uint64_t last_threads;         /* threads alive at the last tick */
        uint64_t samples;              /* thread-samples recorded */
        uint64_t samples_running;      /* of which on a CPU */
        uint64_t samples_runnable;     /* of which waiting for a CPU */
        uint64_t samples_stopped;      /* of which taken by interrupting */
        uint64_t samples_blocked;      /* of which taken without stopping */
        uint64_t samples_reused;       /* of which idle threads' previous stack */
        uint64_t samples_restopped;    /* blocked, but stopped to get registers */
        uint64_t samples_perf;         /* of which taken by the kernel on a CPU (no stop) */
        uint64_t perf_lost;            /* perf samples the kernel dropped (a ring was full) */
        uint64_t skipped;              /* thread-samples that could not be taken */
        uint64_t errors;
        uint64_t merge_failed;        /* Python samples whose native/Python merge did not line up */
        uint64_t max_threads;         /* most threads alive at once, all targets */
        uint64_t capture_bytes_freed; /* idle threads' capture buffers given back */
        uint64_t cpu_charged_ns;      /* sum of the samples' cpu values */
        /* after the stops: blocked copies, unwinding, symbolizing, recording */
        uint64_t unwind_ns;
        struct pause_histogram pause;  /* interrupt to resume */
        struct pause_histogram held;   /* stop reported to resume: our doing */
        struct pause_histogram waited; /* interrupt to stop reported: the thread's way there */
};

/* One interrupted thread's pause, in all and in its two parts. */
void run_stats__add_pause(struct run_stats *stats, uint64_t pause_ns, uint64_t held_ns,
                          uint64_t waited_ns);

/* Pause percentile in µs (0 < p < 1); 0 when there were no pauses. */
uint64_t pause_histogram__percentile_us(const struct pause_histogram *h, double p);
uint64_t run_stats__pause_percentile_us(const struct run_stats *stats, double p);
