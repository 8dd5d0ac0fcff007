/* clock.h — the process's one way to read clocks in nanoseconds.
 * CLOCK_MONOTONIC for intervals and deadlines, CLOCK_REALTIME for sample
 * timestamps that leave the process. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t clock__ns(clockid_t clock)
{
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t monotonic_ns(void)
{
        return clock__ns(CLOCK_MONOTONIC);
}

static inline uint64_t realtime_ns(void)
{
        return clock__ns(CLOCK_REALTIME);
}
