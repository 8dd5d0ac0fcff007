/* ctx_raw — writes the span-context segment by hand, to attack the reader.
 *
 *   ctx_raw garbage SEED   a busy thread (spin_work) runs while the main
 *                          thread keeps rewriting one or more segments with
 *                          random and adversarial contents: bad magic,
 *                          huge or zero slot counts, slot counts beyond the
 *                          mapping, foreign owner pids, odd sequences,
 *                          slots naming the busy thread with random start
 *                          times, segments unmapped and re-created.
 *   ctx_raw stale          a valid segment whose slot names the busy
 *                          thread's tid with a valid span but another start
 *                          time: what a dead thread leaves behind when its
 *                          tid is recycled.  No sample may carry that span.
 *   ctx_raw claims         a valid segment of CONTEXT_MAX_SLOTS slots, all
 *                          owned by other (made-up) threads but the last,
 *                          which holds the busy thread's span; the main
 *                          thread bumps header.claims in a tight loop.
 *   ctx_raw quiet          the same segment; the main thread spins the
 *                          same way without touching it (the baseline).
 *
 * Every header has CONTEXT_HEADER_HOME_SLOTS, so threads without an indexed
 * slot get their home slots probed too (the busy thread's slot is never
 * at its home in "claims").
 *
 * Prints the busy thread's tid, then "ready". */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context_format.h"

static volatile pid_t busy_tid;

__attribute__((noinline)) static void spin_work(void)
{
        volatile uint64_t x = 0;

        for (;;)
                x++;
}

static void *busy(void *arg)
{
        (void)arg;
        busy_tid = (pid_t)syscall(SYS_gettid);
        spin_work();
        return NULL;
}

static uint64_t start_time_of(pid_t tid)
{
        char path[64], text[1024];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
        f = fopen(path, "r");
        if (!f)
                return 0;
        n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        char *p = strrchr(text, ')');
        for (int field = 2; p && field < 22; field++)
                p = strchr(p + 1, ' ');
        return p ? strtoull(p + 1, NULL, 10) : 0;
}

struct segment {
        uint8_t *mem;
        size_t len;
};

static struct segment segment__create(size_t len)
{
        struct segment seg = {NULL, len};
        int fd = memfd_create(CONTEXT_MEMFD_NAME, 0);

        if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
                exit(1);
        seg.mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (seg.mem == MAP_FAILED)
                exit(1);
        return seg;
}

static void header__fill(struct context_header *h, uint32_t slots)
{
        memcpy(h->magic, CONTEXT_MAGIC, 8);
        h->version = CONTEXT_VERSION;
        h->header_size = CONTEXT_HEADER_SIZE;
        h->slot_size = CONTEXT_SLOT_SIZE;
        h->slot_count = slots;
        h->owner_pid = getpid();
        h->flags = CONTEXT_HEADER_HOME_SLOTS; /* the reader also probes home slots */
}

static void slot__fill(struct context_slot *slot, pid_t tid, uint64_t start)
{
        memset(slot, 0, sizeof(*slot));
        slot->tid = tid;
        slot->start_time = start;
        memset(slot->trace_id, 0xee, sizeof(slot->trace_id));
        memset(slot->span_id, 0xdd, sizeof(slot->span_id));
        slot->valid = CONTEXT_VALID;
}

static void run_stale(void)
{
        struct segment seg = segment__create(CONTEXT_HEADER_SIZE + 4 * CONTEXT_SLOT_SIZE);
        struct context_slot *slots = (struct context_slot *)(seg.mem + CONTEXT_HEADER_SIZE);

        header__fill((struct context_header *)seg.mem, 4);
        slot__fill(&slots[0], busy_tid, start_time_of(busy_tid) + 7);
        printf("%d\nready\n", (int)busy_tid);
        fflush(stdout);
        for (;;)
                pause();
}

static void run_claims(bool bump)
{
        size_t len = CONTEXT_HEADER_SIZE + (size_t)CONTEXT_MAX_SLOTS * CONTEXT_SLOT_SIZE;
        struct segment seg = segment__create(len);
        struct context_header *h = (struct context_header *)seg.mem;
        struct context_slot *slots = (struct context_slot *)(seg.mem + CONTEXT_HEADER_SIZE);
        volatile uint32_t *claims = &h->claims;
        volatile uint64_t spins = 0;

        header__fill(h, CONTEXT_MAX_SLOTS);
        srand(1);
        for (uint32_t i = 0; i + 1 < CONTEXT_MAX_SLOTS; i++)
                slot__fill(&slots[i], 4000000 + rand() % 100000, (uint64_t)rand());
        slot__fill(&slots[CONTEXT_MAX_SLOTS - 1], busy_tid, start_time_of(busy_tid));
        printf("%d\nready\n", (int)busy_tid);
        fflush(stdout);
        for (;;) {
                if (bump)
                        __atomic_fetch_add(claims, 1, __ATOMIC_RELEASE);
                else
                        spins++;
        }
}

/* One random mutation of `seg`; every few rounds the segment is replaced. */
static void mutate(struct segment *seg, uint64_t start)
{
        struct context_header *h = (struct context_header *)seg->mem;
        struct context_slot *slots = (struct context_slot *)(seg->mem + CONTEXT_HEADER_SIZE);
        size_t room = (seg->len - CONTEXT_HEADER_SIZE) / CONTEXT_SLOT_SIZE;
        int what = rand() % 10;

        header__fill(h, (uint32_t)room);
        for (size_t i = 0; i < room; i++)
                slot__fill(&slots[i], rand() % 3 ? busy_tid : rand(),
                           rand() % 2 ? start : (uint64_t)rand());
        switch (what) {
        case 0: /* pure noise */
                for (size_t i = 0; i < seg->len; i++)
                        seg->mem[i] = (uint8_t)rand();
                break;
        case 1:
                h->magic[rand() % 8] ^= (char)(1 + rand() % 255);
                break;
        case 2:
                h->slot_count = rand() % 2 ? UINT32_MAX : (uint32_t)rand();
                break;
        case 3:
                h->slot_count =
                    (uint32_t)room + 1 + (uint32_t)(rand() % 1000); /* beyond the mapping */
                break;
        case 4:
                h->owner_pid = rand();
                break;
        case 5:
                for (size_t i = 0; i < room; i++)
                        slots[i].seq = (uint32_t)rand() | 1; /* torn */
                break;
        case 6:
                h->version = (uint32_t)rand();
                h->slot_size = (uint32_t)rand();
                break;
        case 7:
                h->claims = (uint32_t)rand(); /* force re-indexing */
                h->slot_count = rand() % 2 ? 0 : (uint32_t)room;
                break;
        default: /* valid, with slots changing under the reader */
                h->claims++;
                break;
        }
}

static void run_garbage(unsigned seed)
{
        struct segment segs[3];
        uint64_t start = start_time_of(busy_tid);

        srand(seed);
        for (int i = 0; i < 3; i++)
                segs[i] = segment__create((size_t)4096 << i);
        printf("%d\nready\n", (int)busy_tid);
        fflush(stdout);
        for (unsigned long round = 0;; round++) {
                struct segment *seg = &segs[round % 3];
                mutate(seg, start);
                if (round % 97 == 0) { /* gone, then back elsewhere */
                        munmap(seg->mem, seg->len);
                        *seg = segment__create((size_t)4096 << (rand() % 4));
                }
                usleep(200);
        }
}

int main(int argc, char **argv)
{
        pthread_t thread;

        if (argc < 2)
                return 2;
        pthread_create(&thread, NULL, busy, NULL);
        while (!busy_tid)
                usleep(1000);
        if (strcmp(argv[1], "stale") == 0)
                run_stale();
        if (strcmp(argv[1], "claims") == 0 || strcmp(argv[1], "quiet") == 0)
                run_claims(strcmp(argv[1], "claims") == 0);
        run_garbage(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
        return 0;
}
