/* target.h — one profiled process and its threads, as the tracer sees them.
 *
 * Every thread is seized once (PTRACE_SEIZE, never PTRACE_ATTACH or
 * SIGSTOP) with PTRACE_O_TRACECLONE, so threads the target creates later
 * are attached by the kernel, and PTRACE_O_TRACEEXEC.  Detaching is left
 * to the kernel: when the tracer thread exits, every tracee is released
 * without a stop, so a thread blocked in epoll_wait never sees EINTR (an
 * explicit PTRACE_DETACH would need the thread stopped first).
 *
 * Per-thread memory: the last unwound stack grows to the thread's depth
 * (an idle thread's is a few hundred bytes, not --max-depth's); the
 * capture buffers (stack copy, interpreter data) just before
 * a capture, outside the stop window, and given back while the thread is
 * idle (attach/capture.h), so the stop window never allocates. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/capture.h"
#include "attach/perf_sampler.h"
#include "attach/proc_thread.h"

struct target_options {
        size_t stack_bytes; /* per-thread stack copy size */
        size_t max_depth;   /* frames kept per stack */
        bool follow_forks;  /* also PTRACE_O_TRACEFORK/VFORK (watch mode) */
};

/* How an unwind ended. */
enum unwind_end {
        UNWIND_COMPLETE,        /* reached the outermost frame */
        UNWIND_DEPTH_LIMIT,     /* --max-depth reached */
        UNWIND_OUT_OF_COPY,     /* needed stack memory beyond the copy */
        UNWIND_NEEDS_REGISTERS, /* no CFI, or a register the capture lacks */
};

/* The last unwound stack of a thread, reused while it stays idle. */
struct thread_stack {
        size_t n_pcs;
        bool truncated;
        enum unwind_end end;
        uint64_t *pcs;     /* lookup addresses, leaf first */
        uint64_t *sps;     /* each frame's stack pointer */
        size_t capacity;   /* entries allocated in pcs and sps */
        uint64_t read_end; /* highest stack address the walk read, exclusive */
};

/* Room for at least n frames in pcs and sps (grown by doubling).  false
 * when out of memory; the frames already there are kept either way. */
bool thread_stack__reserve(struct thread_stack *stack, size_t n);

struct tthread {
        pid_t tid;
        pid_t ns_tid; /* its id in the target's own PID namespace, 0: unread */
        struct proc_thread_files files;
        bool exited;            /* the leader after pthread_exit: a zombie, never sampled */
        bool interrupt_pending; /* PTRACE_INTERRUPT sent, stop not seen yet */
        bool group_stopped;     /* in group-stop, held with PTRACE_LISTEN */
        uint64_t interrupt_ns;  /* CLOCK_MONOTONIC when interrupted */
        uint64_t last_pause_ns; /* interrupt to resume, of the last stop */
        uint64_t stop_seen_ns;  /* CLOCK_MONOTONIC when that stop was reported */
        bool captured;          /* `capture` holds this tick's sample */
        bool blocked_candidate; /* sampler: looked blocked this tick, at blocked_at */
        bool reuse_last_stack;  /* sampler: idle, record last_stack again */
        bool needs_stop;        /* sampler: blocked capture did not unwind */
        struct blocked_point blocked_at;
        char name[16];
        struct capture capture;
        /* Idle detection for blocked threads. */
        bool idle_key_valid;
        struct blocked_point idle_point;
        uint64_t idle_run_count;
        struct thread_stack last_stack;
        bool last_stack_valid;
        /* Scheduler accounting (engine/sampler.c): the thread's state and
         * CPU time per sample. */
        struct proc_schedstat sched_before;  /* this tick, before acting */
        struct proc_schedstat sched_resumed; /* just after its resume */
        bool sched_before_valid, sched_resumed_valid;
        struct proc_schedstat sched_seen; /* at its last sample */
        uint64_t sched_seen_ns;           /* CLOCK_MONOTONIC of that read, 0: none */
        bool sched_seen_stopped;          /* that sample was taken by a stop */
        uint64_t cpu_charged_ns;          /* on_cpu_ns already charged to samples */
        bool cpu_charged_valid;
        /* sampler: why it was off its CPU when this tick's interrupt was sent,
         * if /proc said running (proc_thread__kernel_wait, read
         * right after the interrupt) */
        enum kernel_wait kernel_wait_before;
        uint64_t last_sample_ns; /* CLOCK_MONOTONIC of the last sample, 0: none */
        uint8_t sample_state;    /* this tick's state (engine/sampler.c) */
        /* Span context (context/context_reader.c). */
        uint32_t context_slot;  /* slot index + 1 in the segment, 0: none */
        uint32_t context_probe; /* capture holds slots from this index + 1 on, 0: its own */
        uint64_t context_start; /* start time from /proc (stat field 22), 0: unread */
        /* OTEP 4947 thread context: the thread's fs_base from its last
         * ptrace-stop or glibc's thread lists (0: unknown), and its TLS variable's address
         * when in dynamic TLS (valid while tls_var_serial matches). */
        uint64_t tls_fs_base;
        uint64_t tls_var;
        uint32_t tls_var_serial;
        /* On-CPU samples taken by the kernel (fd -1: none, the thread is
         * interrupted instead); opened while target->perf is on. */
        struct perf_sampler perf;
        bool perf_tick;          /* sampler: sampled from the ring this tick */
        bool perf_due;           /* sampler: the ring held samples this tick */
        uint64_t perf_time_ns;   /* sampler: the current perf sample's time */
        uint64_t perf_period_ns; /* sampler: the CPU time it stands for */
};

struct target {
        pid_t pid;
        /* Whose /proc entry and memory are read (maps, process_vm_readv):
         * pid, or a live thread's tid once the leader has called
         * pthread_exit; a zombie leader has neither maps nor memory. */
        pid_t mem_pid;
        char comm[16];
        bool gone;
        bool execed; /* the mappings must be re-read */
        /* Being let go while the process lives on (watch mode): each
         * thread is PTRACE_DETACHed at its next ptrace-stop and no longer
         * sampled; `gone` is set once the last thread is detached. */
        bool releasing;
        bool released;    /* every thread detached (gone, but not exited) */
        bool same_pid_ns; /* lives in /proc's PID namespace: ids need no mapping */
        struct target_options options;
        /* Perf sampling (attach/perf_sampler.h): on when period_ns is not 0;
         * every thread added meanwhile gets its event. */
        struct perf_sampler_config perf;
        void *owner; /* the sampler's per-target state, not owned here */
        /* The owner's set-up, asked of a worker and not answered yet: the
         * request's serial (0: none) and when (engine/profiled_target.h). */
        uint64_t setup_serial, setup_asked_ns;
        size_t n_threads, threads_capacity;
        struct tthread **threads;
};

/* Seizes every thread of `pid`.  On failure returns -errno and writes a
 * one-line reason into `why`; threads already seized are released when the
 * tracer thread exits. */
int target__attach(pid_t pid, const struct target_options *options, struct target **out, char *why,
                   size_t why_size);
void target__free(struct target *target);

/* A process the kernel attached for us (a traced parent forked it): only
 * its one thread exists, already ours.  NULL on ENOMEM or when gone. */
struct target *target__adopt(pid_t pid, const struct target_options *options);

/* Detaches `thread`, which must be in a ptrace-stop, delivering `sig`, and
 * forgets it; the last one marks the target gone and released. */
void target__detach_thread(struct target *target, struct tthread *thread, int sig);

struct tthread *target__find_thread(struct target *target, pid_t tid);

/* The id `thread` has inside the target, which is what the target stores
 * in its memory (a thread started by a container runtime with its own PID
 * namespace knows itself by another id than ours).  Read from /proc once
 * per thread (tthread.ns_tid); once a thread turns out to live in /proc's
 * own namespace, all the target's threads do and none is read again.
 * thread->tid when unreadable. */
pid_t target__ns_tid(struct target *target, struct tthread *thread);

/* Turns perf sampling on: opens the event of every thread (those added
 * later open theirs in target__add_thread).  0, or -errno of the first
 * thread's open (then nothing stays open and it is off); a later thread
 * that cannot open its event is left without (interrupted instead). */
int target__start_perf(struct target *target, const struct perf_sampler_config *config);
/* Turns it off and closes every thread's event. */
void target__stop_perf(struct target *target);

/* Registers a thread the kernel attached for us (clone).  NULL on ENOMEM or
 * when the thread is already gone. */
struct tthread *target__add_thread(struct target *target, pid_t tid);
void target__remove_thread(struct target *target, pid_t tid);

/* Notices a leader that has exited while its threads run on
 * (pthread_exit), marks it exited and moves mem_pid to a live thread.
 * Returns whether mem_pid changed (the readers must follow it). */
bool target__follow_leader_exit(struct target *target);

/* After exec only the leader survives; its /proc files are reopened and
 * comm is the new program's. */
void target__reset_after_exec(struct target *target);
