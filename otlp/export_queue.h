/* export_queue.h — the bounded hand-off between the tracer thread (which
 * makes records) and the exporter thread (which sends them).
 *
 * Bounded in bytes, not entries: when a push would exceed the budget, the
 * oldest entries are dropped (and counted), so the freshest data survives
 * an outage and a push never waits.  The lock is held only to link and
 * unlink entries, never across I/O or encoding. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct export_entry;

struct export_queue {
        pthread_mutex_t lock;
        pthread_cond_t wake; /* an entry arrived, or stop */
        struct export_entry *head, *tail;
        size_t n_entries, bytes, budget, peak_bytes;
        uint64_t pushed, dropped, dropped_samples;
        bool stopping;
        bool woken; /* export_queue__wake, not yet seen by a sleep */
};

int export_queue__init(struct export_queue *queue, size_t budget_bytes);
/* Frees whatever is still queued. */
void export_queue__release(struct export_queue *queue);

/* Appends `entry` (taking ownership), dropping the oldest beyond budget. */
void export_queue__push(struct export_queue *queue, struct export_entry *entry);

/* Puts a batch that could not be sent back at the head, oldest first, then
 * enforces the budget (which may drop some of it again). */
void export_queue__requeue(struct export_queue *queue, struct export_entry *list);

/* Waits until an entry is queued, stop is requested or `deadline_ns`
 * (CLOCK_MONOTONIC) passes, then unlinks entries from the head while
 * `wire_size` keeps their sum under `max_bytes` (always at least one).
 * Returns the list, or NULL. */
struct export_entry *export_queue__take(struct export_queue *queue, size_t max_bytes,
                                        uint64_t deadline_ns);

/* Wakes a waiting take() and makes later ones return at once when empty. */
void export_queue__stop(struct export_queue *queue);

/* Ends the current (or the next) export_queue__sleep early. */
void export_queue__wake(struct export_queue *queue);

/* Sleeps until `deadline_ns` (CLOCK_MONOTONIC), stop or a wake.  True if
 * stopped. */
bool export_queue__sleep(struct export_queue *queue, uint64_t deadline_ns);

/* A consistent copy of the counters. */
void export_queue__counters(struct export_queue *queue, uint64_t *dropped,
                            uint64_t *dropped_samples, size_t *bytes, size_t *peak_bytes);
