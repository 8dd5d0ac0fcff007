/* ctx_c_spans — the C writer's test target.  Two threads alternate, every
 * 50 ms, between in_span_work() inside a span published with
 * splunk_profd_context_set() and out_span_work() after
 * splunk_profd_context_clear().  Ids have leading zero bytes on purpose.
 * Prints one line per thread, "TID TRACE_HEX SPAN_HEX", then "ready".
 *
 * With CTX_WORKERS_BLOCK=1 each worker enters its span once and then
 * blocks in pause() for good (a thread that never runs after the attach).
 * With CTX_MAIN_EXITS=1 in the environment the main thread calls
 * pthread_exit after "ready": the workers run on under a zombie leader.
 * With CTX_REQUESTS=FILE it is a thread-per-request server instead: each
 * request is a new thread that sets its span at once, spins 10 ms in
 * request_first_10ms() and 15 ms in request_rest(), clears it and appends
 * {"tid": TID, "ids": [TRACE_HEX, SPAN_HEX], "span_ns": [BEGIN, END]} as a
 * line to FILE (CLOCK_REALTIME ns, taken inside the span).
 *
 * Built with CTX_DLOPEN (ctx_c_spans_dlopen LIB): the writer library is
 * not linked but loaded with dlopen, so its TLS is a dlopen'ed module's. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "splunk_profd_context.h"

#ifdef CTX_DLOPEN
#include <dlfcn.h>

static int (*set_fn)(const uint8_t *, const uint8_t *, uint8_t);
static int (*clear_fn)(void);
static int (*init_fn)(unsigned);
#define splunk_profd_context_set   set_fn
#define splunk_profd_context_clear clear_fn
#define splunk_profd_context_init  init_fn

static int load_writer(const char *path)
{
        void *lib = path ? dlopen(path, RTLD_NOW) : NULL;

        if (!lib) {
                fprintf(stderr, "dlopen: %s\n", path ? dlerror() : "no library given");
                return -1;
        }
        set_fn = (int (*)(const uint8_t *, const uint8_t *, uint8_t))dlsym(
            lib, "splunk_profd_context_set");
        clear_fn = (int (*)(void))dlsym(lib, "splunk_profd_context_clear");
        init_fn = (int (*)(unsigned))dlsym(lib, "splunk_profd_context_init");
        return set_fn && clear_fn && init_fn ? 0 : -1;
}
#endif

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Spins for `ms`, checking the clock every `inner` iterations.  Inlined
 * into each named function below, whose name the tests look for. */
static inline __attribute__((always_inline)) void spin_ms(uint64_t ms, int inner)
{
        uint64_t end = now_ms() + ms;
        volatile uint64_t x = 0;

        while (now_ms() < end)
                for (int i = 0; i < inner; i++)
                        x += (uint64_t)i;
}

__attribute__((noinline)) static void in_span_work(void)
{
        spin_ms(50, 10000);
}

__attribute__((noinline)) static void out_span_work(void)
{
        spin_ms(50, 10000);
}

__attribute__((noinline)) static void request_first_10ms(void)
{
        spin_ms(10, 1000);
}

__attribute__((noinline)) static void request_rest(void)
{
        spin_ms(15, 1000);
}

static FILE *requests;

static uint64_t realtime_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void *request(void *arg)
{
        uint32_t n = (uint32_t)(uintptr_t)arg;
        uint8_t trace_id[16] = {0, 0, 0, 0, 0, 0x0b, 0xcd, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        uint8_t span_id[8] = {0, 0, 0x02, 0x46, 0, 0, 0, 0};

        memcpy(trace_id + 12, &n, sizeof(n));
        memcpy(span_id + 4, &n, sizeof(n));
        splunk_profd_context_set(trace_id, span_id, 1);
        uint64_t begin = realtime_ns();
        request_first_10ms();
        request_rest();
        uint64_t end = realtime_ns();
        splunk_profd_context_clear();
        fprintf(requests, "{\"tid\": %ld, \"ids\": [\"", (long)syscall(SYS_gettid));
        for (int i = 0; i < 16; i++)
                fprintf(requests, "%02x", trace_id[i]);
        fprintf(requests, "\", \"");
        for (int i = 0; i < 8; i++)
                fprintf(requests, "%02x", span_id[i]);
        fprintf(requests, "\"], \"span_ns\": [%llu, %llu]}\n", (unsigned long long)begin,
                (unsigned long long)end);
        fflush(requests);
        return NULL;
}

static int serve_requests(const char *path)
{
        requests = fopen(path, "a");
        if (!requests)
                return 1;
        printf("ready\n");
        fflush(stdout);
        for (uint32_t n = 1;; n++) {
                pthread_t thread;
                if (pthread_create(&thread, NULL, request, (void *)(uintptr_t)n) != 0)
                        return 1;
                pthread_join(thread, NULL);
                usleep(5 * 1000);
        }
}

static void *worker(void *arg)
{
        uint8_t n = (uint8_t)(uintptr_t)arg;
        uint8_t trace_id[16] = {0, 0, 0, 0, 0, 0x0a, 0xbc, 0, 0, 0, 0, 0, 0, 0, 0x12, n};
        uint8_t span_id[8] = {0, 0, 0x01, 0x23, 0x45, 0x67, 0x89, n};

        pthread_mutex_lock(&print_lock);
        printf("%ld ", (long)syscall(SYS_gettid));
        for (int i = 0; i < 16; i++)
                printf("%02x", trace_id[i]);
        printf(" ");
        for (int i = 0; i < 8; i++)
                printf("%02x", span_id[i]);
        printf("\n");
        fflush(stdout);
        pthread_mutex_unlock(&print_lock);
        if (getenv("CTX_WORKERS_BLOCK") && strcmp(getenv("CTX_WORKERS_BLOCK"), "1") == 0) {
                splunk_profd_context_set(trace_id, span_id, 1);
                for (;;)
                        pause();
        }
        for (;;) {
                splunk_profd_context_set(trace_id, span_id, 1);
                in_span_work();
                splunk_profd_context_clear();
                out_span_work();
        }
        return NULL;
}

int main(int argc, char **argv)
{
        pthread_t threads[2];

        (void)argc;
        (void)argv;
#ifdef CTX_DLOPEN
        if (load_writer(argv[1]) < 0)
                return 1;
#endif
        if (splunk_profd_context_init(0) < 0)
                return 1;
        if (getenv("CTX_REQUESTS"))
                return serve_requests(getenv("CTX_REQUESTS"));
        for (uintptr_t i = 0; i < 2; i++)
                pthread_create(&threads[i], NULL, worker, (void *)(i + 1));
        usleep(100 * 1000);
        pthread_mutex_lock(&print_lock);
        printf("ready\n");
        fflush(stdout);
        pthread_mutex_unlock(&print_lock);
        if (getenv("CTX_MAIN_EXITS") && strcmp(getenv("CTX_MAIN_EXITS"), "1") == 0)
                pthread_exit(NULL);
        pthread_join(threads[0], NULL);
        return 0;
}
