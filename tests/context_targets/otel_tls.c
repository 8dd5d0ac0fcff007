/* otel_tls — an OpenTelemetry thread-context (OTEP 4947) and process-
 * context (OTEP 4719) writer written by hand, for the reader's tests.
 *
 *   otel_tls exe [N]        otel_thread_ctx_v1 defined in this executable
 *                           (local-exec: static TLS)
 *   otel_tls dlopen LIB [N] defined in LIB, loaded with dlopen (dynamic TLS
 *                           for a global-dynamic LIB, maybe static for a
 *                           TLSDESC one)
 *   otel_tls garbage SEED   one busy thread whose record and process
 *                           context are rewritten with random contents
 *
 * N worker threads (default 3) each publish their own span (trace id
 * 0x01..0x10 with the worker number in byte 15, span id ending in it) and
 * an attribute http.route=/w/<i>, then spin.  Prints "TID TRACE SPAN" per
 * worker, then "ready". */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "otel_tls_var.h"

#ifdef OTEL_TLS_IN_EXE
__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;
void **otel_tls_slot(void)
{
        return &otel_thread_ctx_v1;
}
#endif

static void **(*slot_fn)(void);
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int started;

/* --- protobuf by hand ------------------------------------------------- */
struct buf {
        uint8_t b[4096];
        size_t n;
};
static void put(struct buf *o, const void *p, size_t n)
{
        if (o->n + n <= sizeof(o->b)) {
                memcpy(o->b + o->n, p, n);
                o->n += n;
        }
}
static void varint(struct buf *o, uint64_t v)
{
        do {
                uint8_t byte = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
                put(o, &byte, 1);
                v >>= 7;
        } while (v);
}
static void field(struct buf *o, unsigned num, const void *p, size_t n)
{
        varint(o, (uint64_t)num << 3 | 2);
        varint(o, n);
        put(o, p, n);
}
static void any_string(struct buf *o, const char *s)
{
        field(o, 1, s, strlen(s));
}
static void key_value_string(struct buf *o, unsigned num, const char *k, const char *v)
{
        struct buf kv = {0}, any = {0};
        any_string(&any, v);
        field(&kv, 1, k, strlen(k));
        field(&kv, 2, any.b, any.n);
        field(o, num, kv.b, kv.n);
}

static size_t process_context_payload(uint8_t *out, size_t cap)
{
        struct buf resource = {0}, pc = {0}, array = {0}, any = {0}, kv = {0}, one = {0};

        key_value_string(&resource, 1, "service.name", "otel-tls-test");
        key_value_string(&resource, 1, "deployment.environment.name", "otep-test");
        field(&pc, 1, resource.b, resource.n);
        key_value_string(&pc, 2, "threadlocal.schema_version", "tlsdesc_v1_dev");
        any_string(&one, "http.route");
        field(&array, 1, one.b, one.n);
        field(&any, 5, array.b, array.n);
        field(&kv, 1, "threadlocal.attribute_key_map", strlen("threadlocal.attribute_key_map"));
        field(&kv, 2, any.b, any.n);
        field(&pc, 2, kv.b, kv.n);
        memcpy(out, pc.b, pc.n < cap ? pc.n : cap);
        return pc.n;
}

static uint8_t *publish_process_context(void)
{
        int fd = (int)syscall(SYS_memfd_create, "OTEL_CTX", 1u /* MFD_CLOEXEC */);
        uint8_t *m;
        uint32_t version = 2, size;
        uint64_t payload, now;
        struct timespec ts;

        if (fd < 0 || ftruncate(fd, 8192) < 0)
                return NULL;
        m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        close(fd);
        if (m == MAP_FAILED)
                return NULL;
        size = (uint32_t)process_context_payload(m + 64, 8192 - 64);
        payload = (uint64_t)(uintptr_t)(m + 64);
        memcpy(m, "OTEL_CTX", 8);
        memcpy(m + 8, &version, 4);
        memcpy(m + 12, &size, 4);
        memcpy(m + 24, &payload, 8);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        clock_gettime(CLOCK_BOOTTIME, &ts);
        now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        __atomic_store_n((uint64_t *)(m + 16), now, __ATOMIC_RELEASE);
        return m;
}

/* --- workers ---------------------------------------------------------- */
struct record {
        uint8_t trace_id[16];
        uint8_t span_id[8];
        uint8_t valid;
        uint8_t flags;
        uint16_t attrs_size;
        uint8_t attrs[64];
} __attribute__((packed, aligned(8)));

__attribute__((noinline)) static void spin_work(volatile uint64_t *x)
{
        for (int i = 0; i < 100000; i++)
                *x = *x * 6364136223846793005ull + 1;
}

static void *worker(void *arg)
{
        int index = (int)(intptr_t)arg;
        static __thread struct record rec; /* this thread's, fixed */
        volatile uint64_t x = (uint64_t)index;

        for (int i = 0; i < 16; i++)
                rec.trace_id[i] = (uint8_t)(i + 1);
        rec.trace_id[15] = (uint8_t)(0xa0 + index);
        memset(rec.span_id, 0x5b, sizeof(rec.span_id));
        rec.span_id[7] = (uint8_t)(0xc0 + index);
        rec.flags = 1;
        int n = snprintf((char *)rec.attrs + 2, sizeof(rec.attrs) - 2, "/w/%d", index);
        rec.attrs[0] = 0;
        rec.attrs[1] = (uint8_t)n;
        rec.attrs_size = (uint16_t)(2 + n);
        rec.valid = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        *slot_fn() = &rec;

        pthread_mutex_lock(&print_lock);
        printf("%ld ", (long)syscall(SYS_gettid));
        for (int i = 0; i < 16; i++)
                printf("%02x", rec.trace_id[i]);
        printf(" ");
        for (int i = 0; i < 8; i++)
                printf("%02x", rec.span_id[i]);
        printf("\n");
        fflush(stdout);
        started++;
        pthread_mutex_unlock(&print_lock);
        for (;;)
                spin_work(&x);
        return NULL;
}

/* --- garbage ---------------------------------------------------------- */
static void garbage(unsigned seed, uint8_t *pc)
{
        static __thread uint8_t junk[700] __attribute__((aligned(8)));
        uint8_t good[4096];
        size_t good_n = process_context_payload(good, sizeof(good));
        volatile uint64_t x = 1;

        srand(seed);
        for (uint64_t round = 0;; round++) {
                for (size_t i = 0; i < sizeof(junk); i++)
                        junk[i] = (uint8_t)rand();
                if (rand() % 2)
                        junk[24] = 1; /* valid, with random attribute data */
                void *ptrs[] = {junk,
                                junk + 1,
                                NULL,
                                (void *)(uintptr_t)rand(),
                                (void *)(uintptr_t)0xdeadbeef000ull,
                                junk + 600};
                *slot_fn() = ptrs[rand() % 6];
                if (pc) {
                        uint8_t *payload = pc + 64;
                        uint32_t size = (uint32_t)(rand() % 3 == 0 ? rand() : rand() % 4000);
                        memcpy(payload, good, good_n);
                        for (int i = 0; i < 1 + rand() % 8; i++)
                                payload[rand() % (good_n + 1)] = (uint8_t)rand();
                        if (rand() % 4 == 0) /* deep nesting: AnyValue in arrays */
                                for (size_t i = 0; i + 2 < 4000; i += 2)
                                        payload[i] = 0x2a, payload[i + 1] = (uint8_t)(4000 - i - 2);
                        uint64_t ptr = rand() % 5 ? (uint64_t)(uintptr_t)payload : (uint64_t)rand();
                        uint64_t when = round + 1;
                        memcpy(pc + 12, &size, 4);
                        memcpy(pc + 24, &ptr, 8);
                        if (rand() % 7 == 0)
                                pc[rand() % 16] = (uint8_t)rand();
                        else
                                memcpy(pc, "OTEL_CTX\2\0\0\0", 12);
                        memcpy(pc + 16, &when, 8);
                }
                for (int i = 0; i < 20; i++)
                        spin_work(&x);
        }
}

int main(int argc, char **argv)
{
        const char *mode = argc > 1 ? argv[1] : "exe";
        int n = 3;
        uint8_t *pc;

        setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef OTEL_TLS_IN_EXE
        slot_fn = otel_tls_slot;
#endif
        if (strcmp(mode, "dlopen") == 0) {
                void *lib = argc > 2 ? dlopen(argv[2], RTLD_NOW) : NULL;
                slot_fn = lib ? (void **(*)(void))dlsym(lib, "otel_tls_slot") : NULL;
                if (!slot_fn) {
                        fprintf(stderr, "dlopen: %s\n", dlerror());
                        return 1;
                }
                if (argc > 3)
                        n = atoi(argv[3]);
        } else if (argc > 2) {
                n = atoi(argv[2]);
        }
        if (!slot_fn) {
                fprintf(stderr, "no otel_thread_ctx_v1 in this build\n");
                return 1;
        }
        pc = publish_process_context();
        if (strcmp(mode, "garbage") == 0) {
                printf("%ld\nready\n", (long)syscall(SYS_gettid));
                garbage(argc > 2 ? (unsigned)atoi(argv[2]) : 1, pc);
        }
        for (int i = 0; i < n; i++) {
                pthread_t t;
                pthread_create(&t, NULL, worker, (void *)(intptr_t)i);
        }
        while (started < n)
                usleep(1000);
        printf("ready\n");
        pause();
        return 0;
}
