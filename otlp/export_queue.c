/* export_queue.c — see export_queue.h.  A singly linked FIFO under one
 * mutex; the condition variable runs on CLOCK_MONOTONIC so that deadlines
 * survive wall-clock jumps. */
#include "otlp/export_queue.h"

#include <errno.h>
#include <time.h>

#include "otlp/otlp_logs.h"

static struct timespec to_timespec(uint64_t ns)
{
        return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
                                 .tv_nsec = (long)(ns % 1000000000u)};
}

int export_queue__init(struct export_queue *queue, size_t budget_bytes)
{
        pthread_condattr_t attr;
        int r;

        *queue = (struct export_queue){.budget = budget_bytes};
        if (pthread_condattr_init(&attr) != 0)
                return -ENOMEM;
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        r = pthread_cond_init(&queue->wake, &attr);
        pthread_condattr_destroy(&attr);
        if (r != 0)
                return -r;
        r = pthread_mutex_init(&queue->lock, NULL);
        if (r != 0) {
                pthread_cond_destroy(&queue->wake);
                return -r;
        }
        return 0;
}

void export_queue__release(struct export_queue *queue)
{
        export_entry__free_list(queue->head);
        queue->head = queue->tail = NULL;
        pthread_cond_destroy(&queue->wake);
        pthread_mutex_destroy(&queue->lock);
}

/* Lock held. */
static void drop_over_budget(struct export_queue *queue)
{
        while (queue->head && queue->bytes > queue->budget) {
                struct export_entry *oldest = queue->head;
                queue->head = oldest->next;
                if (!queue->head)
                        queue->tail = NULL;
                queue->bytes -= export_entry__size(oldest);
                queue->n_entries--;
                queue->dropped++;
                queue->dropped_samples += oldest->n_samples;
                export_entry__free(oldest);
        }
}

static void note_peak(struct export_queue *queue)
{
        if (queue->bytes > queue->peak_bytes)
                queue->peak_bytes = queue->bytes;
}

void export_queue__push(struct export_queue *queue, struct export_entry *entry)
{
        entry->next = NULL;
        pthread_mutex_lock(&queue->lock);
        if (queue->tail)
                queue->tail->next = entry;
        else
                queue->head = entry;
        queue->tail = entry;
        queue->bytes += export_entry__size(entry);
        queue->n_entries++;
        queue->pushed++;
        drop_over_budget(queue);
        note_peak(queue);
        pthread_cond_signal(&queue->wake);
        pthread_mutex_unlock(&queue->lock);
}

void export_queue__requeue(struct export_queue *queue, struct export_entry *list)
{
        struct export_entry *last = list;

        if (!list)
                return;
        pthread_mutex_lock(&queue->lock);
        for (struct export_entry *e = list; e; e = e->next) {
                queue->bytes += export_entry__size(e);
                queue->n_entries++;
                last = e;
        }
        last->next = queue->head;
        queue->head = list;
        if (!queue->tail)
                queue->tail = last;
        drop_over_budget(queue);
        note_peak(queue);
        pthread_mutex_unlock(&queue->lock);
}

/* Lock held: unlinks the head batch. */
static struct export_entry *unlink_batch(struct export_queue *queue, size_t max_bytes)
{
        struct export_entry *list = queue->head, *last = NULL;
        size_t sum = 0;

        for (struct export_entry *e = queue->head; e; e = e->next) {
                size_t size = otlp_logs__entry_wire_size(e);
                if (last && sum + size > max_bytes)
                        break;
                sum += size;
                queue->bytes -= export_entry__size(e);
                queue->n_entries--;
                last = e;
        }
        if (!last)
                return NULL;
        queue->head = last->next;
        if (!queue->head)
                queue->tail = NULL;
        last->next = NULL;
        return list;
}

struct export_entry *export_queue__take(struct export_queue *queue, size_t max_bytes,
                                        uint64_t deadline_ns)
{
        struct timespec until = to_timespec(deadline_ns);
        struct export_entry *list;

        pthread_mutex_lock(&queue->lock);
        while (!queue->head && !queue->stopping)
                if (pthread_cond_timedwait(&queue->wake, &queue->lock, &until) == ETIMEDOUT)
                        break;
        list = unlink_batch(queue, max_bytes);
        pthread_mutex_unlock(&queue->lock);
        return list;
}

void export_queue__stop(struct export_queue *queue)
{
        pthread_mutex_lock(&queue->lock);
        queue->stopping = true;
        pthread_cond_broadcast(&queue->wake);
        pthread_mutex_unlock(&queue->lock);
}

void export_queue__wake(struct export_queue *queue)
{
        pthread_mutex_lock(&queue->lock);
        queue->woken = true;
        pthread_cond_broadcast(&queue->wake);
        pthread_mutex_unlock(&queue->lock);
}

bool export_queue__sleep(struct export_queue *queue, uint64_t deadline_ns)
{
        struct timespec until = to_timespec(deadline_ns);
        bool stopped;

        pthread_mutex_lock(&queue->lock);
        while (!queue->stopping && !queue->woken)
                if (pthread_cond_timedwait(&queue->wake, &queue->lock, &until) == ETIMEDOUT)
                        break;
        queue->woken = false;
        stopped = queue->stopping;
        pthread_mutex_unlock(&queue->lock);
        return stopped;
}

void export_queue__counters(struct export_queue *queue, uint64_t *dropped,
                            uint64_t *dropped_samples, size_t *bytes, size_t *peak_bytes)
{
        pthread_mutex_lock(&queue->lock);
        *dropped = queue->dropped;
        *dropped_samples = queue->dropped_samples;
        *bytes = queue->bytes;
        *peak_bytes = queue->peak_bytes;
        pthread_mutex_unlock(&queue->lock);
}
