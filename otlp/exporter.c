/* exporter.c — see exporter.h.
 *
 * Loop: take a batch from the head of the queue (up to MAX_REQUEST_BYTES
 * of estimated wire size, so every request stays under the collector's
 * 4 MiB default), encode, send.  Then:
 *   OK                  the batch is freed; the backoff resets;
 *   retryable status    the batch goes back to the head of the queue (so
 *                       drop-oldest still applies to it) and the thread
 *                       sleeps an exponential backoff with full jitter;
 *   other status        the batch is dropped and counted.
 * A collector that keeps failing is reported once, then at most once a
 * minute with a count, so journald is not flooded.
 *
 * Reconfiguring (SIGHUP): the new client waits in `pending` until the
 * thread is between two requests (at the top of the loop, or woken from a
 * backoff sleep), then replaces the old one; the queue is not touched.
 *
 * Memory: the queue holds at most budget - MAX_REQUEST_BYTES, and at most
 * one batch of MAX_REQUEST_BYTES (plus its encoding) is out of the queue
 * at a time, so the total stays within the configured budget. */
#include "otlp/exporter.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otlp/export_config.h"
#include "otlp/export_queue.h"
#include "otlp/otlp_grpc.h"
#include "otlp/otlp_logs.h"
#include "util/log.h"
#include "util/mailbox.h"
#include "util/clock.h"

#define MAX_REQUEST_BYTES  (3u * 1024 * 1024 + 512 * 1024)
#define IN_FLIGHT_RESERVE  (2u * MAX_REQUEST_BYTES)
#define BACKOFF_INITIAL_MS 500
#define BACKOFF_MAX_MS     5000
#define LOG_EVERY_NS       (60ull * 1000000000u)
#define IDLE_WAKE_NS       (1000ull * 1000000u)

struct exporter {
        struct export_config config;
        struct export_queue queue;
        struct otlp_grpc *client;
        pthread_t thread;
        bool started;
        uint64_t abort_at_ns;   /* atomic; 0 = none */
        uint64_t stop_deadline; /* atomic; CLOCK_MONOTONIC */
        unsigned int seed;
        int64_t backoff_ms;
        uint64_t last_error_log_ns, errors_since_log, last_drop_log_ns, drops_logged;
        struct exporter_stats stats; /* exporter thread; read after join */
        /* exporter thread -> one reader while it runs (the health line):
         * a copy of `stats` after every request, by message */
        struct mailbox stats_box;
        struct exporter_stats received; /* the reader's newest copy */
        /* exporter__reconfigure -> exporter thread, under pending_lock */
        pthread_mutex_t pending_lock;
        struct otlp_grpc *pending_client;
        struct export_config pending_config;
};

struct exporter *exporter__new(const struct export_config *config, char *error, size_t error_size)
{
        struct exporter *exporter = calloc(1, sizeof(*exporter));
        size_t budget = (size_t)config->memory_mb * 1024 * 1024;

        if (!exporter) {
                snprintf(error, error_size, "out of memory");
                return NULL;
        }
        exporter->config = *config;
        exporter->stats_box = (struct mailbox)MAILBOX_INIT;
        pthread_mutex_init(&exporter->pending_lock, NULL);
        exporter->seed = (unsigned int)clock__ns(CLOCK_MONOTONIC);
        exporter->backoff_ms = BACKOFF_INITIAL_MS;
        if (export_queue__init(&exporter->queue, budget - IN_FLIGHT_RESERVE) < 0 ||
            mailbox__init(&exporter->stats_box, sizeof(struct exporter_stats)) < 0) {
                snprintf(error, error_size, "cannot create the export queue");
                mailbox__release(&exporter->stats_box);
                free(exporter);
                return NULL;
        }
        exporter->client = otlp_grpc__new(config, error, error_size);
        if (!exporter->client) {
                export_queue__release(&exporter->queue);
                free(exporter);
                return NULL;
        }
        return exporter;
}

void exporter__submit(struct exporter *exporter, struct export_entry *entry)
{
        export_queue__push(&exporter->queue, entry);
}

static void log_drops(struct exporter *exporter, bool final)
{
        uint64_t dropped, samples, now = clock__ns(CLOCK_MONOTONIC);
        size_t bytes, peak;

        export_queue__counters(&exporter->queue, &dropped, &samples, &bytes, &peak);
        if (dropped == exporter->drops_logged)
                return;
        if (!final && exporter->last_drop_log_ns && now - exporter->last_drop_log_ns < LOG_EVERY_NS)
                return;
        log_warning("export: memory budget of %lld MiB full: dropped %llu oldest records "
                    "(%llu samples) so far",
                    (long long)exporter->config.memory_mb, (unsigned long long)dropped,
                    (unsigned long long)samples);
        exporter->drops_logged = dropped;
        exporter->last_drop_log_ns = now;
}

static void log_failure(struct exporter *exporter, const struct otlp_result *result, bool retry)
{
        uint64_t now = clock__ns(CLOCK_MONOTONIC);

        exporter->errors_since_log++;
        if (exporter->last_error_log_ns && now - exporter->last_error_log_ns < LOG_EVERY_NS)
                return;
        log_warning("export to %s failed (gRPC status %d: %s)%s; %llu failure(s) since the last "
                    "report",
                    exporter->config.endpoint, result->status,
                    result->message[0] ? result->message : "no details",
                    retry ? ", retrying with backoff" : ", records dropped",
                    (unsigned long long)exporter->errors_since_log);
        exporter->last_error_log_ns = now;
        exporter->errors_since_log = 0;
}

static size_t count_list(const struct export_entry *list, uint64_t *samples)
{
        size_t n = 0;

        for (; list; list = list->next, n++)
                *samples += list->n_samples;
        return n;
}

int exporter__reconfigure(struct exporter *exporter, const struct export_config *config,
                          char *error, size_t error_size)
{
        struct otlp_grpc *client = otlp_grpc__new(config, error, error_size), *unused;

        if (!client)
                return -EINVAL;
        pthread_mutex_lock(&exporter->pending_lock);
        unused = exporter->pending_client; /* a reload not taken yet: superseded */
        exporter->pending_client = client;
        exporter->pending_config = *config;
        pthread_mutex_unlock(&exporter->pending_lock);
        otlp_grpc__free(unused);
        export_queue__wake(&exporter->queue); /* out of a backoff sleep */
        return 0;
}

/* Exporter thread, between requests: takes a pending connection. */
static void take_pending(struct exporter *exporter)
{
        struct otlp_grpc *old;

        pthread_mutex_lock(&exporter->pending_lock);
        if (!exporter->pending_client) {
                pthread_mutex_unlock(&exporter->pending_lock);
                return;
        }
        old = exporter->client;
        exporter->client = exporter->pending_client;
        exporter->pending_client = NULL;
        /* Only the connection changes; budget and flush interval stay. */
        snprintf(exporter->config.endpoint, sizeof(exporter->config.endpoint), "%s",
                 exporter->pending_config.endpoint);
        snprintf(exporter->config.target, sizeof(exporter->config.target), "%s",
                 exporter->pending_config.target);
        snprintf(exporter->config.ca_file, sizeof(exporter->config.ca_file), "%s",
                 exporter->pending_config.ca_file);
        exporter->config.tls = exporter->pending_config.tls;
        exporter->config.timeout_ms = exporter->pending_config.timeout_ms;
        exporter->config.n_headers = exporter->pending_config.n_headers;
        memcpy(exporter->config.headers, exporter->pending_config.headers,
               sizeof(exporter->config.headers));
        pthread_mutex_unlock(&exporter->pending_lock);
        otlp_grpc__free(old);
        exporter->backoff_ms = BACKOFF_INITIAL_MS;
        exporter->last_error_log_ns = 0;
        exporter->errors_since_log = 0;
        log_notice("export: now sending to %s (%s, %zu headers)", exporter->config.endpoint,
                   exporter->config.tls ? "TLS" : "plaintext", exporter->config.n_headers);
}

static bool stopping_past_deadline(struct exporter *exporter)
{
        uint64_t deadline = __atomic_load_n(&exporter->stop_deadline, __ATOMIC_ACQUIRE);

        return deadline && clock__ns(CLOCK_MONOTONIC) >= deadline;
}

/* Full jitter on an exponential base: [base/2, base). */
static void back_off(struct exporter *exporter)
{
        int64_t base = exporter->backoff_ms;
        uint64_t sleep_ms = (uint64_t)(base / 2 + rand_r(&exporter->seed) % (base / 2 + 1));
        uint64_t until = clock__ns(CLOCK_MONOTONIC) + sleep_ms * 1000000u;
        uint64_t deadline = __atomic_load_n(&exporter->stop_deadline, __ATOMIC_ACQUIRE);
        struct timespec ts;

        exporter->backoff_ms = base * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : base * 2;
        if (!deadline) {
                (void)export_queue__sleep(&exporter->queue, until);
                deadline = __atomic_load_n(&exporter->stop_deadline, __ATOMIC_ACQUIRE);
                if (!deadline)
                        return;
        }
        /* Stopping: wake no later than the shutdown deadline. */
        until = until < deadline ? until : deadline;
        ts = (struct timespec){.tv_sec = (time_t)(until / 1000000000u),
                               .tv_nsec = (long)(until % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static void on_sent(struct exporter *exporter, struct export_entry *list, size_t len,
                    const struct otlp_result *result)
{
        uint64_t samples = 0;
        size_t n = count_list(list, &samples);

        if (exporter->stats.requests_sent == 0 || exporter->backoff_ms > BACKOFF_INITIAL_MS)
                log_info("export to %s: ok (%zu records)", exporter->config.endpoint, n);
        exporter->stats.requests_sent++;
        exporter->stats.records_sent += n;
        exporter->stats.samples_sent += samples;
        exporter->stats.bytes_sent += len;
        exporter->backoff_ms = BACKOFF_INITIAL_MS;
        if (result->rejected_log_records > 0) {
                exporter->stats.rejected_records += (uint64_t)result->rejected_log_records;
                log_warning("export: the collector rejected %lld records: %s",
                            (long long)result->rejected_log_records, result->partial_message);
        }
        export_entry__free_list(list);
}

static void send_batch(struct exporter *exporter, struct export_entry *list)
{
        uint8_t *request = NULL;
        size_t len = 0;
        uint64_t samples = 0;
        struct otlp_result result;
        bool retry;

        if (otlp_logs__encode_request(list, &request, &len) < 0) {
                exporter->stats.failed_records += count_list(list, &samples);
                export_entry__free_list(list);
                log_error("export: out of memory encoding a request");
                return;
        }
        otlp_grpc__export(exporter->client, request, len, exporter->config.timeout_ms,
                          &exporter->abort_at_ns, &result);
        free(request);
        if (result.status == OTLP_OK) {
                on_sent(exporter, list, len, &result);
                return;
        }
        retry = otlp_status__retryable(result.status) && !stopping_past_deadline(exporter);
        log_failure(exporter, &result, retry);
        if (!retry) {
                exporter->stats.failed_records += count_list(list, &samples);
                export_entry__free_list(list);
                return;
        }
        exporter->stats.retries++;
        export_queue__requeue(&exporter->queue, list);
        back_off(exporter);
}

static void publish_stats(struct exporter *exporter)
{
        exporter->stats.cpu_ns = clock__ns(CLOCK_THREAD_CPUTIME_ID);
        (void)mailbox__send(&exporter->stats_box, &exporter->stats);
}

static void *exporter__main(void *arg)
{
        struct exporter *exporter = arg;

        for (;;) {
                struct export_entry *list = export_queue__take(
                    &exporter->queue, MAX_REQUEST_BYTES, clock__ns(CLOCK_MONOTONIC) + IDLE_WAKE_NS);
                log_drops(exporter, false);
                take_pending(exporter);
                if (!list) {
                        if (__atomic_load_n(&exporter->stop_deadline, __ATOMIC_ACQUIRE))
                                break;
                        continue;
                }
                if (stopping_past_deadline(exporter)) {
                        export_queue__requeue(&exporter->queue, list);
                        break;
                }
                send_batch(exporter, list);
                publish_stats(exporter);
        }
        log_drops(exporter, true);
        exporter->stats.cpu_ns = clock__ns(CLOCK_THREAD_CPUTIME_ID);
        return NULL;
}

int exporter__start(struct exporter *exporter)
{
        int r = pthread_create(&exporter->thread, NULL, exporter__main, exporter);

        if (r != 0)
                return -r;
        exporter->started = true;
        return 0;
}

void exporter__stop(struct exporter *exporter, int64_t deadline_ms)
{
        uint64_t deadline = clock__ns(CLOCK_MONOTONIC) + (uint64_t)deadline_ms * 1000000u;
        uint64_t samples = 0;

        if (!exporter->started)
                return;
        __atomic_store_n(&exporter->stop_deadline, deadline, __ATOMIC_RELEASE);
        __atomic_store_n(&exporter->abort_at_ns, deadline, __ATOMIC_RELEASE);
        export_queue__stop(&exporter->queue);
        pthread_join(exporter->thread, NULL);
        exporter->started = false;
        pthread_mutex_lock(&exporter->queue.lock);
        exporter->stats.unsent_at_exit = count_list(exporter->queue.head, &samples);
        pthread_mutex_unlock(&exporter->queue.lock);
        if (exporter->stats.unsent_at_exit)
                log_warning("export: %llu records not sent before the shutdown deadline",
                            (unsigned long long)exporter->stats.unsent_at_exit);
}

/* The queue's own counters are read under the queue's lock. */
static void add_queue_counters(const struct exporter *exporter, struct exporter_stats *stats)
{
        struct export_queue *queue = (struct export_queue *)&exporter->queue;
        size_t bytes;

        export_queue__counters(queue, &stats->dropped_records, &stats->dropped_samples, &bytes,
                               &stats->peak_queue_bytes);
}

void exporter__stats(const struct exporter *exporter, struct exporter_stats *stats)
{
        *stats = exporter->stats;
        add_queue_counters(exporter, stats);
}

void exporter__stats_running(struct exporter *exporter, struct exporter_stats *stats)
{
        (void)mailbox__receive(&exporter->stats_box, &exporter->received);
        *stats = exporter->received;
        add_queue_counters(exporter, stats);
}

void exporter__free(struct exporter *exporter)
{
        if (!exporter)
                return;
        exporter__stop(exporter, 0);
        otlp_grpc__free(exporter->client);
        otlp_grpc__free(exporter->pending_client);
        pthread_mutex_destroy(&exporter->pending_lock);
        export_queue__release(&exporter->queue);
        mailbox__release(&exporter->stats_box);
        free(exporter);
}
