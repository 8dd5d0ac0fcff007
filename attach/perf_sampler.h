/* perf_sampler.h — one thread's on-CPU samples, taken by the kernel.
 *
 * A per-thread software event (perf_event_open, PERF_COUNT_SW_TASK_CLOCK)
 * fires each time the thread has used `period_ns` of CPU, in the timer
 * interrupt that ends that period, wherever the thread is: the kernel
 * records its user registers and a copy of its user stack into a small
 * ring buffer mapped into our address space.  Run-queue and sleep time
 * never advance the task clock, so no sample is ever taken there, and the
 * thread is never stopped.  Reading the ring is memory only (no system
 * call); each record is checked against the ring's bounds before it is
 * used.
 *
 * Samples fired in the kernel (a system call's own CPU time) are kept:
 * their user registers are those the thread entered the kernel with, so
 * the time is charged to the user stack that made the call, as `perf
 * record -e cpu-clock` does.  That needs CAP_PERFMON (or CAP_SYS_ADMIN)
 * or perf_event_paranoid <= 1; without, perf_event_open fails with
 * EACCES and the caller samples by ptrace stops instead. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/capture.h"

/* User stack bytes the kernel copies per sample: perf's default.  A native
 * server's stack at a sample is a few KiB deep (a deeper one is unwound as
 * far as the copy goes and labelled truncated). */
#define PERF_SAMPLER_STACK_BYTES 8192
/* Ring data pages per thread (a power of two): 128 KiB, room for 15
 * samples, 150 ms of a busy thread's CPU at 10 ms: a tracer that falls
 * that far behind loses samples, counted in perf_lost. */
#define PERF_SAMPLER_RING_PAGES 32

/* A new event's first sample comes after this much CPU (or period_ns if
 * shorter), so that a thread is seen soon after it appears, as a stop
 * would see it at the next tick; its period then becomes period_ns. */
#define PERF_SAMPLER_FIRST_PERIOD_NS (1000ull * 1000)

struct perf_sampler_config {
        uint64_t period_ns;   /* CPU time between samples; 0: perf sampling off */
        uint32_t stack_bytes; /* user stack copied per sample (multiple of 8, < 64 KiB) */
        uint32_t ring_pages;  /* data pages of the ring (a power of two) */
};

/* One thread's event and ring.  Zeroed with fd = -1 (perf_sampler__init)
 * it holds nothing; perf_sampler__close accepts it in any state. */
struct perf_sampler {
        int fd;         /* -1: none */
        uint8_t *base;  /* header page, then data_size bytes of ring */
        size_t map_len; /* bytes mapped at base */
        uint64_t data_size;
        uint64_t lost;      /* samples the kernel dropped (ring full) */
        uint64_t period_ns; /* to set after the first sample (0: set) */
        /* The regular period, which samples stand for once it is set: the
         * kernel keeps reporting the first period for hrtimer events. */
        uint64_t regular_ns;
        uint64_t invalid; /* records that failed a check (ring skipped) */
};

/* What a sample says beyond the capture. */
struct perf_sample_info {
        uint64_t time_ns;   /* CLOCK_MONOTONIC when it fired */
        uint64_t period_ns; /* the thread's CPU time it stands for */
};

void perf_sampler__init(struct perf_sampler *sampler);

/* Opens the event on thread `tid` (any process we may ptrace) and maps its
 * ring; counting starts at once.  0 or -errno (EACCES/EPERM: not allowed,
 * see above); on failure the sampler holds nothing. */
int perf_sampler__open(struct perf_sampler *sampler, pid_t tid,
                       const struct perf_sampler_config *config);

/* Whether one such event may be opened here, tried on this thread itself
 * (closed at once): 0 or -errno as perf_sampler__open. */
int perf_sampler__probe(const struct perf_sampler_config *config);

/* Whether the ring holds any record (memory only). */
bool perf_sampler__pending(const struct perf_sampler *sampler);

/* Takes the oldest sample out of the ring into `capture` (kind
 * CAPTURE_PERF: all registers the unwinder uses, the stack copy from SP
 * into capture->stack, up to its capacity; the caller has made the
 * buffer ready), skipping other records.  Returns 1 with a sample, 0 when
 * the ring is empty, or -EBADMSG when a record failed its checks (what
 * was left in the ring is dropped).  The event's first sample also takes
 * the periods of the short-period samples after it (their CPU time is
 * charged to its stack) and sets the regular period: one ioctl, once per
 * thread; a refusal closes the event (the thread is interrupted instead). */
int perf_sampler__next(struct perf_sampler *sampler, struct capture *capture, pid_t pid, pid_t tid,
                       struct perf_sample_info *info);

/* Drops everything in the ring (a tick that sampled the thread otherwise). */
void perf_sampler__discard(struct perf_sampler *sampler);

void perf_sampler__close(struct perf_sampler *sampler);
