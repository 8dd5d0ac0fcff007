/* test_export_queue.c — unit tests for otlp/export_queue.c: the budget is
 * in bytes (export_entry__size), the oldest entries go first and are
 * counted, take() batches from the head under a wire-size limit, and a
 * batch put back goes to the head in its order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otlp/export_queue.h"
#include "otlp/otlp_logs.h"
#include "otlp/otlp_resource.h"
#include "tests/unit/check.h"
#include "util/clock.h"

/* One resource shared by every entry; no attributes, so the wire size of
 * an entry is its body plus a fixed overhead. */
static struct otlp_resource *test_resource(void)
{
        struct otlp_resource *resource = calloc(1, sizeof(*resource));

        CHECK(resource);
        resource->refs = 1;
        return resource;
}

/* An entry named by `id` (kept in time_ns) with a body of `body_len`
 * bytes and `n_samples` samples. */
static struct export_entry *entry_new(struct otlp_resource *resource, uint64_t id, size_t body_len,
                                      size_t n_samples)
{
        struct export_entry *entry = malloc(sizeof(*entry) + body_len + 1);

        CHECK(entry);
        *entry = (struct export_entry){
            .resource = otlp_resource__ref(resource),
            .time_ns = id,
            .n_samples = n_samples,
            .body_len = body_len,
        };
        memset(entry->body, 'A', body_len);
        entry->body[body_len] = '\0';
        return entry;
}

/* The ids of `list`, in order, into ids[]; returns how many. */
static size_t list_ids(const struct export_entry *list, uint64_t *ids, size_t max)
{
        size_t n = 0;

        for (; list; list = list->next) {
                CHECK(n < max);
                ids[n++] = list->time_ns;
        }
        return n;
}

/* The queue's own list, head to tail, checked against its counters. */
static size_t queue_ids(const struct export_queue *queue, uint64_t *ids, size_t max)
{
        size_t n = list_ids(queue->head, ids, max), bytes = 0;
        const struct export_entry *last = NULL;

        for (const struct export_entry *e = queue->head; e; e = e->next) {
                bytes += export_entry__size(e);
                last = e;
        }
        CHECK(n == queue->n_entries);
        CHECK(bytes == queue->bytes);
        CHECK(queue->tail == last);
        return n;
}

static uint64_t past_deadline(void)
{
        return clock__ns(CLOCK_MONOTONIC);
}

static void test_push_within_budget(void)
{
        struct otlp_resource *resource = test_resource();
        struct export_queue queue;
        uint64_t ids[8], dropped, dropped_samples;
        size_t bytes, peak, one;

        CHECK(export_queue__init(&queue, 1 << 20) == 0);
        for (uint64_t i = 1; i <= 3; i++)
                export_queue__push(&queue, entry_new(resource, i, 100, 2));
        one = export_entry__size(queue.head);
        CHECK(one > 100); /* the header counts too, not just the body */
        CHECK(queue_ids(&queue, ids, 8) == 3 && ids[0] == 1 && ids[1] == 2 && ids[2] == 3);
        CHECK(queue.pushed == 3 && queue.dropped == 0);
        export_queue__counters(&queue, &dropped, &dropped_samples, &bytes, &peak);
        CHECK(dropped == 0 && dropped_samples == 0 && bytes == 3 * one && peak == 3 * one);
        export_queue__release(&queue);
        CHECK(resource->refs == 1); /* release freed every queued entry */
        otlp_resource__unref(resource);
}

static void test_drop_oldest(void)
{
        struct otlp_resource *resource = test_resource();
        struct export_entry *probe = entry_new(resource, 0, 100, 0);
        size_t one = export_entry__size(probe);
        struct export_queue queue;
        uint64_t ids[8], dropped, dropped_samples;
        size_t bytes, peak;

        export_entry__free(probe);
        /* Room for three entries and a bit, not four. */
        CHECK(export_queue__init(&queue, 3 * one + one / 2) == 0);
        for (uint64_t i = 1; i <= 5; i++)
                export_queue__push(&queue, entry_new(resource, i, 100, 10 * i));
        CHECK(queue_ids(&queue, ids, 8) == 3 && ids[0] == 3 && ids[1] == 4 && ids[2] == 5);
        export_queue__counters(&queue, &dropped, &dropped_samples, &bytes, &peak);
        CHECK(dropped == 2 && dropped_samples == 10 + 20);
        CHECK(bytes == 3 * one && peak == 3 * one);
        CHECK(queue.pushed == 5);

        /* A record larger than the whole budget cannot be kept: it evicts
         * everything, itself included, and is counted. */
        export_queue__push(&queue, entry_new(resource, 6, 4 * one, 7));
        CHECK(queue_ids(&queue, ids, 8) == 0 && queue.head == NULL);
        export_queue__counters(&queue, &dropped, &dropped_samples, &bytes, &peak);
        CHECK(dropped == 6 && dropped_samples == 10 + 20 + 30 + 40 + 50 + 7 && bytes == 0);
        export_queue__release(&queue);
        CHECK(resource->refs == 1);
        otlp_resource__unref(resource);
}

static void test_take_batches(void)
{
        struct otlp_resource *resource = test_resource();
        struct export_queue queue;
        struct export_entry *list;
        uint64_t ids[8];
        size_t wire;

        CHECK(export_queue__init(&queue, 1 << 20) == 0);
        for (uint64_t i = 1; i <= 5; i++)
                export_queue__push(&queue, entry_new(resource, i, 1000, 1));
        wire = otlp_logs__entry_wire_size(queue.head);

        /* Two fit under 2.5 entries' wire size; the batch is the oldest. */
        list = export_queue__take(&queue, 2 * wire + wire / 2, past_deadline());
        CHECK(list_ids(list, ids, 8) == 2 && ids[0] == 1 && ids[1] == 2);
        CHECK(queue_ids(&queue, ids, 8) == 3 && ids[0] == 3);
        export_entry__free_list(list);

        /* Always at least one, even when it alone is over the limit. */
        list = export_queue__take(&queue, 1, past_deadline());
        CHECK(list_ids(list, ids, 8) == 1 && ids[0] == 3);
        export_entry__free_list(list);

        list = export_queue__take(&queue, SIZE_MAX / 2, past_deadline());
        CHECK(list_ids(list, ids, 8) == 2 && ids[0] == 4 && ids[1] == 5);
        CHECK(queue_ids(&queue, ids, 8) == 0 && queue.tail == NULL);
        export_entry__free_list(list);

        /* Empty: returns NULL once the deadline has passed. */
        CHECK(export_queue__take(&queue, SIZE_MAX / 2, past_deadline()) == NULL);
        export_queue__release(&queue);
        CHECK(resource->refs == 1);
        otlp_resource__unref(resource);
}

static void test_requeue_at_head(void)
{
        struct otlp_resource *resource = test_resource();
        struct export_entry *probe = entry_new(resource, 0, 100, 0);
        size_t one = export_entry__size(probe);
        struct export_queue queue;
        struct export_entry *list;
        uint64_t ids[8], dropped, dropped_samples;
        size_t bytes, peak;

        export_entry__free(probe);
        CHECK(export_queue__init(&queue, 4 * one) == 0);
        for (uint64_t i = 1; i <= 3; i++)
                export_queue__push(&queue, entry_new(resource, i, 100, i));
        list = export_queue__take(&queue, SIZE_MAX / 2, past_deadline());
        CHECK(list_ids(list, ids, 8) == 3);
        CHECK(queue.bytes == 0 && queue.n_entries == 0);

        /* Newer records arrive while the batch is in flight... */
        export_queue__push(&queue, entry_new(resource, 4, 100, 4));
        /* ...and the failed batch goes back before them, in its order. */
        export_queue__requeue(&queue, list);
        CHECK(queue_ids(&queue, ids, 8) == 4);
        CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 3 && ids[3] == 4);
        export_queue__counters(&queue, &dropped, &dropped_samples, &bytes, &peak);
        CHECK(dropped == 0 && bytes == 4 * one && peak == 4 * one);

        /* Over budget after a put-back: the oldest (put back) go first. */
        list = export_queue__take(&queue, 1, past_deadline()); /* takes 1 */
        export_queue__push(&queue, entry_new(resource, 5, 100, 5));
        export_queue__push(&queue, entry_new(resource, 6, 100, 6));
        export_queue__requeue(&queue, list);
        CHECK(queue_ids(&queue, ids, 8) == 4);
        CHECK(ids[0] == 3 && ids[1] == 4 && ids[2] == 5 && ids[3] == 6);
        export_queue__counters(&queue, &dropped, &dropped_samples, &bytes, &peak);
        CHECK(dropped == 2 && dropped_samples == 1 + 2);

        export_queue__requeue(&queue, NULL); /* nothing to put back */
        CHECK(queue_ids(&queue, ids, 8) == 4);
        export_queue__release(&queue);
        CHECK(resource->refs == 1);
        otlp_resource__unref(resource);
}

static void test_stop_and_wake(void)
{
        struct otlp_resource *resource = test_resource();
        struct export_queue queue;
        uint64_t begin, far = clock__ns(CLOCK_MONOTONIC) + 60ull * 1000000000u;

        CHECK(export_queue__init(&queue, 1 << 20) == 0);
        /* A wake before the sleep ends it at once, and is consumed. */
        export_queue__wake(&queue);
        begin = clock__ns(CLOCK_MONOTONIC);
        CHECK(!export_queue__sleep(&queue, far));
        CHECK(!export_queue__sleep(&queue, past_deadline()));
        export_queue__stop(&queue);
        CHECK(export_queue__sleep(&queue, far));
        /* Stopped and empty: take returns at once. */
        CHECK(export_queue__take(&queue, SIZE_MAX / 2, far) == NULL);
        CHECK(clock__ns(CLOCK_MONOTONIC) - begin < 10ull * 1000000000u);
        /* Stopped but not empty: what is queued can still be taken. */
        export_queue__push(&queue, entry_new(resource, 1, 10, 1));
        struct export_entry *list = export_queue__take(&queue, SIZE_MAX / 2, far);
        CHECK(list && list->time_ns == 1 && !list->next);
        export_entry__free_list(list);
        export_queue__release(&queue);
        otlp_resource__unref(resource);
}

int main(void)
{
        test_push_within_budget();
        test_drop_oldest();
        test_take_batches();
        test_requeue_at_head();
        test_stop_and_wake();
        printf("ok\n");
        return 0;
}
