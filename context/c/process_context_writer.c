/* process_context_writer.c — see process_context_writer.h.
 *
 * Publication (OTEP 4719): memfd_create("OTEL_CTX"), ftruncate, mmap
 * MAP_PRIVATE (the pages are this process's only; the memfd just gives the
 * mapping its name in /proc/PID/maps), close the fd, MADV_DONTFORK so a
 * child never shows its parent's resource.  Without memfd (seccomp, old
 * kernel) an anonymous mapping named with PR_SET_VMA_ANON_NAME stands in.
 * The payload follows the header in the same mapping.  Field order: the
 * version, payload size and pointer first, then the signature, then
 * published-at (CLOCK_BOOTTIME ns, never 0): a reader that keys on either
 * the signature or a non-zero published-at sees a complete header.  The
 * fences are full ones because, unlike a thread record, the process
 * context may be read while the process runs.
 *
 * The mapping is never unmapped: readers may hold its address, and a
 * re-publication in the same process reuses it with the OTEP's update
 * protocol (published-at 0, fence, fields, fence, new published-at). */
#include "process_context_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA           0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#define VALUE_MAX 1024u /* bytes of a published string */

struct header {
        char signature[8];
        uint32_t version;
        uint32_t payload_size;
        uint64_t published_at_ns;
        uint64_t payload;
};

_Static_assert(sizeof(struct header) == PROCESS_CONTEXT_WRITER_HEADER, "OTEP 4719 header");

struct pb {
        uint8_t *b;
        size_t n, cap;
        int overflow;
};

static void pb__bytes(struct pb *o, const void *p, size_t n)
{
        if (o->overflow || n > o->cap - o->n) {
                o->overflow = 1;
                return;
        }
        memcpy(o->b + o->n, p, n);
        o->n += n;
}

static void pb__varint(struct pb *o, uint64_t v)
{
        do {
                uint8_t byte = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                pb__bytes(o, &byte, 1);
                v >>= 7;
        } while (v);
}

/* A length-delimited field: tag, length, bytes. */
static void pb__field(struct pb *o, unsigned number, const void *p, size_t n)
{
        pb__varint(o, (uint64_t)number << 3 | 2);
        pb__varint(o, n);
        pb__bytes(o, p, n);
}

/* KeyValue{key, AnyValue{string_value}} as field `number` of `o`.  The
 * nested messages are small, so they are built in stack buffers. */
static void pb__string_attribute(struct pb *o, unsigned number, const char *key, const char *value)
{
        uint8_t any_b[VALUE_MAX + 8], kv_b[2 * VALUE_MAX + 32];
        struct pb any = {any_b, 0, sizeof(any_b), 0}, kv = {kv_b, 0, sizeof(kv_b), 0};

        pb__field(&any, 1, value, strnlen(value, VALUE_MAX));
        pb__field(&kv, 1, key, strnlen(key, VALUE_MAX));
        pb__field(&kv, 2, any.b, any.n);
        if (any.overflow || kv.overflow)
                o->overflow = 1;
        pb__field(o, number, kv.b, kv.n);
}

size_t process_context_writer__encode(uint8_t *out, size_t cap, const char *service_name)
{
        static const char key_map[] = "threadlocal.attribute_key_map";
        uint8_t resource_b[3 * VALUE_MAX], kv_b[64];
        struct pb o = {out, 0, cap, 0}, resource = {resource_b, 0, sizeof(resource_b), 0},
                  kv = {kv_b, 0, sizeof(kv_b), 0};

        if (service_name && service_name[0])
                pb__string_attribute(&resource, 1, "service.name", service_name);
        pb__field(&o, 1, resource.b, resource.n);
        pb__string_attribute(&o, 2, "threadlocal.schema_version", PROCESS_CONTEXT_WRITER_SCHEMA);
        /* The C API publishes no record attributes: an empty key map
         * (AnyValue.array_value, field 5, holding no values). */
        pb__field(&kv, 1, key_map, sizeof(key_map) - 1);
        pb__field(&kv, 2, "\x2a\x00", 2);
        pb__field(&o, 2, kv.b, kv.n);
        return o.overflow || resource.overflow || kv.overflow ? 0 : o.n;
}

static uint64_t boottime_ns(void)
{
        struct timespec ts;

        if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
                return 1;
        uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        return ns ? ns : 1; /* 0 means "update in progress" */
}

/* The mapping of this process (pid), NULL before the first publication
 * or in a fork child, where MADV_DONTFORK left nothing at that address. */
static struct {
        struct header *header;
        pid_t pid;
} published;

static struct header *mapping__create(void)
{
        size_t len = PROCESS_CONTEXT_WRITER_MAP_BYTES;
        int fd = memfd_create(PROCESS_CONTEXT_WRITER_NAME, MFD_CLOEXEC);
        void *mem;

        if (fd >= 0) {
                if (ftruncate(fd, (off_t)len) < 0) {
                        close(fd);
                        return NULL;
                }
                mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
                close(fd);
        } else {
                mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        }
        if (mem == MAP_FAILED)
                return NULL;
        if (madvise(mem, len, MADV_DONTFORK) < 0) {
                munmap(mem, len);
                return NULL;
        }
        if (fd < 0) /* only anonymous mappings take a name; failure is fine (< 5.17) */
                (void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, mem, len,
                            PROCESS_CONTEXT_WRITER_NAME);
        return mem;
}

int process_context_writer__publish(void)
{
        uint8_t payload[PROCESS_CONTEXT_WRITER_MAP_BYTES - PROCESS_CONTEXT_WRITER_HEADER];
        size_t size =
            process_context_writer__encode(payload, sizeof(payload), getenv("OTEL_SERVICE_NAME"));
        struct header *h = published.pid == getpid() ? published.header : NULL;

        if (!size)
                return -E2BIG;
        if (!h) {
                h = mapping__create();
                if (!h)
                        return -errno;
                published.header = h;
                published.pid = getpid();
        } else {
                __atomic_store_n(&h->published_at_ns, 0, __ATOMIC_RELAXED);
                __atomic_thread_fence(__ATOMIC_SEQ_CST);
        }
        memcpy((uint8_t *)h + PROCESS_CONTEXT_WRITER_HEADER, payload, size);
        h->version = PROCESS_CONTEXT_WRITER_VERSION;
        h->payload_size = (uint32_t)size;
        h->payload = (uint64_t)(uintptr_t)((uint8_t *)h + PROCESS_CONTEXT_WRITER_HEADER);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        memcpy(h->signature, PROCESS_CONTEXT_WRITER_NAME, sizeof(h->signature));
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&h->published_at_ns, boottime_ns(), __ATOMIC_RELEASE);
        return 0;
}
