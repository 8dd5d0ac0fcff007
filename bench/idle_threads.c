/* idle_threads.c — daemon-mode benchmark target (bench/run.py question 7):
 * an idle native service.  Usage: idle_threads [THREADS]
 *
 * THREADS (default 10) threads in all, main included, each blocked a few
 * frames deep in nanosleep, read of a pipe nobody writes, poll,
 * pthread_cond_wait or epoll_wait, in turn; the first one ("heartbeat")
 * wakes every 0.5 s, the others never run again.  Prints "ready" once
 * every thread has been started. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t started;

static __attribute__((noinline)) void idle_heartbeat(void)
{
        struct timespec half = {.tv_nsec = 500000000};

        for (;;)
                nanosleep(&half, NULL);
}

static __attribute__((noinline)) void idle_sleep(void)
{
        struct timespec hour = {.tv_sec = 3600};

        for (;;)
                nanosleep(&hour, NULL);
}

static __attribute__((noinline)) void idle_read(void)
{
        char byte;

        while (read(pipe_fds[0], &byte, 1) != 0)
                ;
}

static __attribute__((noinline)) void idle_poll(void)
{
        struct pollfd pfd = {.fd = pipe_fds[0], .events = POLLIN};

        for (;;)
                poll(&pfd, 1, -1);
}

static __attribute__((noinline)) void idle_cond(void)
{
        pthread_mutex_lock(&mutex);
        for (;;)
                pthread_cond_wait(&cond, &mutex);
}

static __attribute__((noinline)) void idle_epoll(void)
{
        int ep = epoll_create1(0);
        struct epoll_event ev;

        for (;;)
                epoll_wait(ep, &ev, 1, -1);
}

static void (*const kinds[])(void) = {idle_sleep, idle_read, idle_poll, idle_cond, idle_epoll};

static void *thread_main(void *arg)
{
        void (*fn)(void) = (void (*)(void))arg;

        pthread_barrier_wait(&started);
        fn();
        return NULL;
}

int main(int argc, char **argv)
{
        int n = argc > 1 ? atoi(argv[1]) : 10;
        pthread_t id;

        if (n < 1 || n > 10000 || pipe(pipe_fds) < 0)
                return 2;
        pthread_barrier_init(&started, NULL, (unsigned)n);
        for (int i = 0; i < n - 1; i++) {
                void (*fn)(void) = i == 0 ? idle_heartbeat : kinds[(i - 1) % 5];

                if (pthread_create(&id, NULL, thread_main, (void *)fn) != 0)
                        return 1;
        }
        pthread_barrier_wait(&started);
        printf("ready\n");
        fflush(stdout);
        idle_sleep();
        return 0;
}
