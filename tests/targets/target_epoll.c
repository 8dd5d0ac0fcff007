/* target_epoll — checks that profiling does not disturb blocked syscalls.
 *
 * Threads:
 *   "epoll-wait"  epoll_wait(timeout -1) on stdin; epoll_wait is never
 *                 restarted after a ptrace stop, so any interruption of this
 *                 thread shows up as an EINTR return;
 *   "pipe-read"   read() on a pipe that nobody writes;
 *   "busy-spin"   spins, so the profiler has a running thread to interrupt.
 *
 * When stdin becomes readable (data or EOF) it prints "eintr=N" (the EINTR
 * returns seen by epoll-wait and pipe-read) and exits 0. */
#include "target_common.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <unistd.h>

static pthread_barrier_t started;
static atomic_int eintr_count;
static int pipe_fds[2];
static volatile unsigned long spin_sink;

static void *epoll_thread_main(void *arg)
{
        struct epoll_event event = {.events = EPOLLIN};
        int epfd = epoll_create1(EPOLL_CLOEXEC);

        (void)arg;
        if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &event) < 0)
                target_check("epoll on stdin", errno);
        target_thread_started("epoll-wait", &started);
        for (;;) {
                int n = epoll_wait(epfd, &event, 1, -1);

                if (n > 0)
                        break;
                if (n < 0 && errno == EINTR)
                        atomic_fetch_add(&eintr_count, 1);
                else if (n < 0)
                        target_check("epoll_wait", errno);
        }
        printf("eintr=%d\n", atomic_load(&eintr_count));
        fflush(stdout);
        exit(0);
}

static void *pipe_thread_main(void *arg)
{
        char byte;

        (void)arg;
        target_thread_started("pipe-read", &started);
        for (;;) {
                ssize_t n = read(pipe_fds[0], &byte, 1);

                if (n < 0 && errno == EINTR)
                        atomic_fetch_add(&eintr_count, 1);
                else if (n <= 0)
                        target_check("read", n < 0 ? errno : EPIPE);
        }
        return NULL;
}

static void *busy_spin_main(void *arg)
{
        (void)arg;
        target_thread_started("busy-spin", &started);
        for (unsigned long i = 0;; i++)
                spin_sink = i;
        return NULL;
}

int main(void)
{
        pthread_t epoll_thread;

        if (pipe(pipe_fds) < 0)
                target_check("pipe", errno);
        target_check("pthread_barrier_init", pthread_barrier_init(&started, NULL, 4));
        epoll_thread = target_spawn(epoll_thread_main);
        target_spawn(pipe_thread_main);
        target_spawn(busy_spin_main);
        pthread_barrier_wait(&started);
        target_ready();
        pthread_join(epoll_thread, NULL);
        return 0;
}
