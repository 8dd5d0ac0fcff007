/* target_split — a thread with a known split of its own CPU time, the truth
 * a CPU profile is checked against (tests/test_cpu.py).
 *
 *   target_split epoll   thread "split-worker": a timerfd fires every
 *                        500 µs; on each wake-up it computes for about
 *                        100 µs of its own CPU time in split_compute(),
 *                        then waits in epoll_wait again;
 *   target_split spin    thread "split-worker" spins in split_compute()
 *                        forever (a thread that is always runnable).
 *
 * The worker measures its own CPU clock (CLOCK_THREAD_CPUTIME_ID) around
 * each split_compute() call: compute_ns is the CPU time inside it,
 * other_ns the CPU time outside it (epoll_wait, read, the clock calls).
 * Each line written to stdin makes the main thread print
 * "compute_ns=N other_ns=N tid=T". */
#include "target_common.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t started;
static atomic_uint_fast64_t compute_ns, other_ns;
static atomic_int worker_tid;
static volatile uint64_t sink;
static uint64_t iterations_per_call = 20000;
static int spin_mode;

static uint64_t thread_cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void split_compute(uint64_t iterations)
{
        uint64_t x = sink;

        for (uint64_t i = 0; i < iterations; i++)
                x = x * 6364136223846793005u + 1442695040888963407u;
        sink = x;
}

/* Iterations that take about 100 µs of CPU on this machine. */
static void calibrate(void)
{
        uint64_t best = UINT64_MAX;

        for (int round = 0; round < 20; round++) {
                uint64_t t0 = thread_cpu_ns();
                split_compute(iterations_per_call);
                uint64_t took = thread_cpu_ns() - t0;
                if (took < best)
                        best = took;
        }
        if (best > 0)
                iterations_per_call = iterations_per_call * 100000u / best;
        if (iterations_per_call == 0)
                iterations_per_call = 1;
}

static int timer_epoll(void)
{
        struct itimerspec every = {.it_interval = {0, 500000}, .it_value = {0, 500000}};
        int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        int epfd = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event event = {.events = EPOLLIN, .data.fd = tfd};

        if (tfd < 0 || epfd < 0 || timerfd_settime(tfd, 0, &every, NULL) < 0 ||
            epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &event) < 0)
                target_check("timerfd/epoll", errno);
        return epfd;
}

__attribute__((noinline)) static void split_loop(void)
{
        int epfd = spin_mode ? -1 : timer_epoll();
        uint64_t last = thread_cpu_ns();

        for (;;) {
                if (!spin_mode) {
                        struct epoll_event event;
                        uint64_t expirations;
                        if (epoll_wait(epfd, &event, 1, -1) == 1)
                                (void)!read(event.data.fd, &expirations, sizeof(expirations));
                }
                uint64_t begin = thread_cpu_ns();
                split_compute(iterations_per_call);
                uint64_t end = thread_cpu_ns();
                atomic_fetch_add_explicit(&other_ns, begin - last, memory_order_relaxed);
                atomic_fetch_add_explicit(&compute_ns, end - begin, memory_order_relaxed);
                last = end;
        }
}

static void *worker_main(void *arg)
{
        (void)arg;
        atomic_store(&worker_tid, (int)syscall(SYS_gettid));
        calibrate();
        target_thread_started("split-worker", &started);
        split_loop();
        return NULL;
}

int main(int argc, char **argv)
{
        char line[64];

        spin_mode = argc > 1 && strcmp(argv[1], "spin") == 0;
        target_check("pthread_barrier_init", pthread_barrier_init(&started, NULL, 2));
        target_spawn(worker_main);
        pthread_barrier_wait(&started);
        target_ready();
        while (fgets(line, sizeof(line), stdin)) {
                printf("compute_ns=%llu other_ns=%llu tid=%d\n",
                       (unsigned long long)atomic_load(&compute_ns),
                       (unsigned long long)atomic_load(&other_ns), atomic_load(&worker_tid));
                fflush(stdout);
        }
        return 0;
}
