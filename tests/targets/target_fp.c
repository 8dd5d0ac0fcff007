/* target_fp.c — frame-pointer code blocked in syscalls.  Built with
 * -fno-omit-frame-pointer, so the CFA of fp_wait_* and their callers is
 * RBP-based: sampling the blocked threads without stopping them (SP and PC
 * from /proc only) must recover RBP from the stack copy to unwind past
 * fp_wait_*.  One thread waits in epoll_wait (which an interrupt would
 * fail with EINTR), one in read (which restarts transparently).  When
 * stdin has data or closes, prints "eintr=N" and exits. */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "target_common.h"

static pthread_barrier_t started;
static int pipe_fds[2];
static int eintr_count;

static __attribute__((noinline)) int fp_wait_epoll(int epoll_fd)
{
        struct epoll_event event;
        int n = epoll_wait(epoll_fd, &event, 1, -1);

        __asm__ volatile("" ::: "memory");
        return n;
}

static __attribute__((noinline)) void fp_outer_epoll(int epoll_fd)
{
        for (;;) {
                if (fp_wait_epoll(epoll_fd) >= 0)
                        break;
                if (errno == EINTR)
                        eintr_count++;
        }
        __asm__ volatile("" ::: "memory");
}

static void *fp_epoll_main(void *arg)
{
        struct epoll_event event = {.events = EPOLLIN | EPOLLHUP};
        int epoll_fd = epoll_create1(0);

        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, 0, &event);
        target_thread_started("fp-epoll", &started);
        fp_outer_epoll(epoll_fd);
        printf("eintr=%d\n", eintr_count);
        fflush(stdout);
        exit(0);
}

static __attribute__((noinline)) long fp_wait_read(int fd)
{
        char byte;
        long n = read(fd, &byte, 1);

        __asm__ volatile("" ::: "memory");
        return n;
}

static __attribute__((noinline)) void fp_outer_read(int fd)
{
        while (fp_wait_read(fd) != 0)
                __asm__ volatile("" ::: "memory");
}

static void *fp_read_main(void *arg)
{
        target_thread_started("fp-read", &started);
        fp_outer_read(pipe_fds[0]);
        return NULL;
}

int main(void)
{
        target_check("pipe", pipe(pipe_fds) ? errno : 0);
        target_check("barrier", pthread_barrier_init(&started, NULL, 3));
        target_spawn(fp_epoll_main);
        target_spawn(fp_read_main);
        pthread_barrier_wait(&started);
        target_ready();
        for (;;)
                pause();
}
