/* progress.h — the one-line progress display of a recording on a terminal:
 *
 *   splunk-profd: 12.3s/30s  samples 2460  threads 5  skipped 0
 *
 * The tracer thread sends its counters after every tick (struct
 * run_status, engine/run_status.h); the main thread redraws the line from
 * the newest a few times a second.  Nothing is drawn when stderr is not a terminal, so
 * logs and CI output stay clean. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct run_status;

struct progress {
        FILE *out;         /* NULL: display off */
        double duration_s; /* 0: until stopped */
        uint64_t start_ns; /* CLOCK_MONOTONIC */
        bool drawn;        /* a line is on screen and must be cleared */
};

/* Enables the display only when `out` is a terminal. */
void progress__init(struct progress *progress, FILE *out, double duration_s);
/* Redraws the line in place from the newest status. */
void progress__draw(struct progress *progress, const struct run_status *status);
/* Erases the line, so the summary and errors start on a clean line. */
void progress__clear(struct progress *progress);
