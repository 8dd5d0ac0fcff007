/* top_table.h — the counts behind `top`: per thread and state, how often
 * each function was the leaf of a sample (self) and how often it was on
 * the stack at all (total, counted once per sample even when recursive).
 *
 * Filled on the tracer thread by the top sample sink, read by the main
 * thread once a second for drawing; one mutex guards both, held only for
 * a sample's worth of hash updates or one snapshot.  Two sets of counters:
 * `window` (since the last snapshot: "right now") and `all` (since the
 * start or the last reset). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/index_map.h"

struct sample_event;

struct top_counts {
        uint64_t self, total;
};

struct top_entry {
        char *function, *file;
        bool python;
        pid_t tid;
        bool blocked;
        uint64_t hash;
        uint64_t stamp; /* the last sample that counted this entry's total */
        struct top_counts window, all;
};

struct top_thread {
        pid_t pid, tid;
        char name[16];
        uint64_t running[2], blocked[2]; /* samples: [0] window, [1] all */
};

struct top_table {
        pthread_mutex_t lock;
        struct top_entry *entries;
        size_t n_entries, entries_capacity;
        struct index_map map;
        struct top_thread *threads;
        size_t n_threads, threads_capacity;
        uint64_t stamp;
        bool out_of_memory;
};

/* One line of the view: a function summed over the filtered threads. */
struct top_row {
        const char *function, *file; /* point into the table: valid until reset/free */
        bool python;
        struct top_counts window, all;
};

struct top_filter {
        pid_t tid;         /* 0: every thread */
        bool include_idle; /* also blocked samples */
};

int top_table__init(struct top_table *table);
void top_table__release(struct top_table *table);

/* The sink callback (tracer thread). */
void top_table__on_sample(void *arg, const struct sample_event *event);

/* Main thread, under the table's lock (top_table__lock/unlock): */
void top_table__lock(struct top_table *table);
void top_table__unlock(struct top_table *table);
/* Rows for `filter` (malloc'd, *n rows) and the matching sample counts
 * [0] window, [1] all.  NULL with *n = 0 when empty or out of memory. */
struct top_row *top_table__rows(const struct top_table *table, const struct top_filter *filter,
                                size_t *n, uint64_t samples[2]);
/* Starts a new window (after each drawn frame). */
void top_table__next_window(struct top_table *table);
/* Forgets every count (key r). */
void top_table__reset(struct top_table *table);
