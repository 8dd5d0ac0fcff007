/* test_thread_tcb.c — thread_tcb__walk on this very process: glibc's
 * lists must name every thread with its TCB (pthread_self() on x86-64
 * glibc), and hand-made lists that break a rule (a cycle avoiding the
 * head, a bad self pointer, random words) must give nothing and stay
 * within bounds (run it under ASan to see). */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context/thread_tcb.h"
#include "tests/unit/check.h"

#define WORKERS 3
#define LINK    0x2c0 /* any offset works; glibc 2.3x uses about this */

static pthread_barrier_t started;
static pid_t tids[WORKERS];
static uint64_t tcbs[WORKERS];

static void *worker(void *arg)
{
        size_t i = (size_t)(uintptr_t)arg;

        tids[i] = (pid_t)syscall(SYS_gettid);
        tcbs[i] = (uint64_t)pthread_self();
        pthread_barrier_wait(&started);
        pause();
        return NULL;
}

static const struct thread_tcb_entry *find(const struct thread_tcb_entry *e, int n, pid_t tid)
{
        for (int i = 0; i < n; i++)
                if (e[i].tid == tid)
                        return &e[i];
        return NULL;
}

static void test_own_lists(void)
{
        pthread_t threads[WORKERS];
        struct thread_tcb_entry entries[64];
        const ElfW(Sym) *sym = NULL;
        Dl_info info;
        void *rtld = dlsym(RTLD_DEFAULT, "_rtld_global");

        if (!rtld || !dladdr1(rtld, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) {
                fprintf(stderr, "no _rtld_global (not glibc >= 2.34?): skipped\n");
                return;
        }
        pthread_barrier_init(&started, NULL, WORKERS + 1);
        for (size_t i = 0; i < WORKERS; i++)
                CHECK(pthread_create(&threads[i], NULL, worker, (void *)(uintptr_t)i) == 0);
        pthread_barrier_wait(&started);
        int n = thread_tcb__walk(getpid(), (uint64_t)(uintptr_t)rtld, sym->st_size, entries, 64);
        CHECK(n == WORKERS + 1);
        const struct thread_tcb_entry *main_thread = find(entries, n, getpid());
        CHECK(main_thread && main_thread->tcb == (uint64_t)pthread_self());
        for (size_t i = 0; i < WORKERS; i++) {
                const struct thread_tcb_entry *e = find(entries, n, tids[i]);
                CHECK(e && e->tcb == tcbs[i]);
        }
        /* Too little room: a list that does not fit gives nothing. */
        CHECK(thread_tcb__walk(getpid(), (uint64_t)(uintptr_t)rtld, sym->st_size, entries, 1) < n);
}

/* A fake TCB: self pointers at +0 and +16, the link at LINK, tid after. */
struct fake {
        uint64_t words[(LINK + 24) / 8];
};

static uint64_t node_of(struct fake *f)
{
        return (uint64_t)(uintptr_t)f + LINK;
}

static void fake__init(struct fake *f, pid_t tid, uint64_t next, uint64_t prev)
{
        memset(f, 0, sizeof(*f));
        f->words[0] = f->words[2] = (uint64_t)(uintptr_t)f;
        f->words[LINK / 8] = next;
        f->words[LINK / 8 + 1] = prev;
        memcpy(&f->words[LINK / 8 + 2], &tid, sizeof(tid));
}

static void test_fake_lists(void)
{
        struct fake *f = calloc(3, sizeof(*f));
        uint64_t head[4] = {0};
        uint64_t h = (uint64_t)(uintptr_t)head;
        struct thread_tcb_entry entries[8];

        CHECK(f);
        /* head -> f0 -> f1 -> f2 -> head */
        head[0] = node_of(&f[0]);
        head[1] = node_of(&f[2]);
        fake__init(&f[0], 100, node_of(&f[1]), h);
        fake__init(&f[1], 101, node_of(&f[2]), node_of(&f[0]));
        fake__init(&f[2], 102, h, node_of(&f[1]));
        CHECK(thread_tcb__walk(getpid(), h, sizeof(head), entries, 8) == 3);
        CHECK(entries[1].tid == 101 && entries[1].tcb == (uint64_t)(uintptr_t)&f[1]);
        /* A cycle that never comes back to the head: bounded, nothing. */
        f[2].words[LINK / 8] = node_of(&f[1]);
        f[1].words[LINK / 8 + 1] = node_of(&f[2]);
        CHECK(thread_tcb__walk(getpid(), h, sizeof(head), entries, 8) == 0);
        /* A node whose self pointer is wrong spoils its list. */
        fake__init(&f[1], 101, node_of(&f[2]), node_of(&f[0]));
        fake__init(&f[2], 102, h, node_of(&f[1]));
        f[1].words[2] ^= 8;
        CHECK(thread_tcb__walk(getpid(), h, sizeof(head), entries, 8) == 0);
        /* Random words everywhere: no crash, no entry. */
        srandom(7);
        for (int round = 0; round < 2000; round++) {
                for (size_t i = 0; i < 3 * sizeof(*f) / 8; i++)
                        ((uint64_t *)f)[i] =
                            (random() & 1)
                                ? (uint64_t)(uintptr_t)f + (uint64_t)(random() % (3 * sizeof(*f)))
                                : (uint64_t)random();
                head[0] = node_of(&f[random() % 3]);
                head[1] = node_of(&f[random() % 3]);
                CHECK(thread_tcb__walk(getpid(), h, sizeof(head), entries, 8) >= 0);
        }
        free(f);
}

int main(void)
{
        test_fake_lists();
        test_own_lists();
        printf("thread_tcb: ok\n");
        return 0;
}
