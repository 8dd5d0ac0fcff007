/* target_fp_stale.c — a blocked thread whose stack holds a fake frame-
 * record cycle where a real record is looked for.  stale_outer (frame
 * pointers) keeps, in a local array below its real frame record, two
 * records that point at each other, each with a return address into
 * stale_outer; it calls stale_wait (no frame pointer, SP-based CFI), which
 * fills them in and sleeps in clock_nanosleep (as CPython's time.sleep
 * does; a call that restarts transparently after a stop).  A profiler that samples the thread
 * without stopping it has SP and PC only and must find RBP on the stack:
 * the first record above stale_outer's SP is the fake one, and following
 * it goes round the cycle (each turn's stack pointer no higher than the
 * one before).  The unwind must end there, not repeat stale_outer until
 * --max-depth. */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "target_common.h"

static pthread_barrier_t started;

/* fake[0..1] and fake[2..3] are records {saved RBP, return address}: the
 * first points up at the second (as a real chain would, which is what
 * makes it pass for one), the second back down at the first. */
static __attribute__((noinline, optimize("omit-frame-pointer"))) long
stale_wait(volatile uint64_t *fake)
{
        struct timespec hour = {.tv_sec = 3600};
        uint64_t back = (uint64_t)__builtin_return_address(0);

        fake[0] = (uint64_t)&fake[2];
        fake[1] = back;
        fake[2] = (uint64_t)&fake[0];
        fake[3] = back;
        return clock_nanosleep(CLOCK_MONOTONIC, 0, &hour, NULL);
}

static __attribute__((noinline)) void stale_outer(void)
{
        volatile uint64_t fake[4];

        for (;;)
                stale_wait(fake);
}

static void *stale_main(void *arg)
{
        target_thread_started("fp-stale", &started);
        stale_outer();
        return NULL;
}

int main(void)
{
        target_check("barrier", pthread_barrier_init(&started, NULL, 2));
        target_spawn(stale_main);
        pthread_barrier_wait(&started);
        target_ready();
        for (;;)
                pause();
}
