/* progress.h — the one-line progress display of a recording on a terminal:
 *
 *   splunk-profd: 12.3s/30s  samples 2460  threads 5  skipped 0
 *
 * The tracer thread publishes its counters after every tick into
 * struct progress_counters (relaxed atomics: the main thread only reads a
 * consistent-enough snapshot for display); the main thread redraws the line
 * a few times a second.  Nothing is drawn when stderr is not a terminal, so
 * logs and CI output stay clean. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct run_stats;

struct progress_counters {
        uint64_t samples, skipped, threads, ticks; /* accessed with __atomic builtins only */
};

/* Tracer side: copies the run's counters after a tick. */
void progress__publish(struct progress_counters *counters, const struct run_stats *stats,
                       uint64_t threads);

struct progress {
        FILE *out;         /* NULL: display off */
        double duration_s; /* 0: until stopped */
        uint64_t start_ns; /* CLOCK_MONOTONIC */
        bool drawn;        /* a line is on screen and must be cleared */
};

/* Enables the display only when `out` is a terminal. */
void progress__init(struct progress *progress, FILE *out, double duration_s);
/* Redraws the line in place from the published counters. */
void progress__draw(struct progress *progress, const struct progress_counters *counters);
/* Erases the line, so the summary and errors start on a clean line. */
void progress__clear(struct progress *progress);
