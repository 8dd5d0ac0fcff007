/* target_blocked — threads parked at known points, for `dump` tests that
 * compare with gdb's `thread apply all bt` taken right after the dump:
 *
 *   "blk-sleeper"  blk_sleep_outer -> blk_sleep_inner -> nanosleep (1 h)
 *   "blk-reader"   blk_read_outer -> blk_read_inner -> read (a pipe nobody writes)
 *   "blk-spinner"  blk_spin_outer -> blk_spin_inner (a leaf loop, never returns)
 *   main           pthread_join
 *
 * The blocked ones stay where they are; the spinner is always in its two
 * functions, so each thread's innermost frames of our own code are the
 * same for the dump and for gdb.  Built with -O2 -g -fomit-frame-pointer
 * (tests/targets/meson.build). */
#include <time.h>
#include <unistd.h>

#include "target_common.h"

void blk_sleep_inner(void);
void blk_sleep_outer(void);
void blk_read_inner(void);
void blk_read_outer(void);
void blk_spin_inner(void);
void blk_spin_outer(void);

static pthread_barrier_t started;
static int pipe_fds[2];
static volatile unsigned long spin_counter;

__attribute__((noinline, noipa)) void blk_sleep_inner(void)
{
        struct timespec hour = {.tv_sec = 3600};

        for (;;)
                nanosleep(&hour, NULL);
}

__attribute__((noinline, noipa)) void blk_sleep_outer(void)
{
        blk_sleep_inner();
        __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noipa)) void blk_read_inner(void)
{
        char byte;

        while (read(pipe_fds[0], &byte, 1) != 0)
                ;
}

__attribute__((noinline, noipa)) void blk_read_outer(void)
{
        blk_read_inner();
        __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noipa)) void blk_spin_inner(void)
{
        for (;;)
                spin_counter++;
}

__attribute__((noinline, noipa)) void blk_spin_outer(void)
{
        blk_spin_inner();
        __asm__ volatile("" ::: "memory");
}

static void *sleeper_main(void *arg)
{
        (void)arg;
        target_thread_started("blk-sleeper", &started);
        blk_sleep_outer();
        return NULL;
}

static void *reader_main(void *arg)
{
        (void)arg;
        target_thread_started("blk-reader", &started);
        blk_read_outer();
        return NULL;
}

static void *spinner_main(void *arg)
{
        (void)arg;
        target_thread_started("blk-spinner", &started);
        blk_spin_outer();
        return NULL;
}

int main(void)
{
        pthread_t sleeper;

        if (pipe(pipe_fds) != 0)
                return 1;
        target_check("pthread_barrier_init", pthread_barrier_init(&started, NULL, 4));
        sleeper = target_spawn(sleeper_main);
        target_spawn(reader_main);
        target_spawn(spinner_main);
        pthread_barrier_wait(&started);
        target_ready();
        pthread_join(sleeper, NULL);
        return 0;
}
