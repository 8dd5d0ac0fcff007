/* capture.h — everything copied out of one thread for one sample.
 *
 * A capture is filled while the thread is stopped (or while it is verified
 * blocked) and is all the later stages see: the unwinder reads stack memory
 * only from `stack`, never from the live process, because the thread has
 * moved on by then.  Buffers are allocated before the capture
 * (capture__ready), never inside the stop window; a thread that stays idle
 * is served from its last unwound stack and needs no copy, so its buffers
 * are given back (capture__trim) until it next runs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "attach/proc_thread.h"

/* Interpreter data (CPython thread state, data-stack chunk, top frame)
 * copied in the same stop window as the stack, as up to
 * CAPTURE_INTERP_REGIONS target ranges laid end to end in `buffer`.  What
 * to copy is decided by python/; this only copies.  The buffer is sized
 * after the resume (capture__reserve_interp), never inside the window.
 * `result` is an opaque malloc'd block owned by the capture (python/'s last
 * merged stack, reused while the thread stays idle), freed with it. */
/* The thread state, GIL, chunk and top frame, which asyncio task runs
 * (three) and its name and context (three), the walk to its span's ids
 * (ten: python/py_task_span.h), up to 32 frame ranges
 * prefetched and 32 frames copied one by one (3.11+; 3.9/3.10: 16 plus one
 * per range not prefetched; python/py_frame_copy.h). */
#define CAPTURE_INTERP_REGIONS 85

struct capture_region {
        uint64_t address; /* target address of the copy */
        size_t offset;    /* where it starts in buffer */
        size_t len;       /* bytes valid (a short read keeps what arrived) */
};

struct capture_interp {
        size_t n_regions;
        struct capture_region regions[CAPTURE_INTERP_REGIONS];
        size_t used, capacity; /* capacity: bytes allocated in buffer */
        size_t reserved;       /* capacity asked for (capture__reserve_interp) */
        uint8_t *buffer;
        void *result;
};

/* Slots of the span-context segment (context/context_format.h): the
 * thread's own one, or the CONTEXT_PROBE_SLOTS from its home slot. */
#define CAPTURE_SPAN_SLOT_BYTES (8 * 64)
/* One OTEP 4947 thread record: 28 bytes + attributes, capped at the
 * OTEP's recommended 640 bytes in all. */
#define CAPTURE_THREAD_RECORD_BYTES 640

enum capture_kind {
        CAPTURE_STOPPED, /* interrupted: all registers are known */
        CAPTURE_BLOCKED, /* blocked in a syscall: SP and PC (and maybe BP) */
        /* taken by the kernel at a CPU-time tick (attach/perf_sampler.h):
         * the general-purpose registers and IP, the stack from SP (no red
         * zone), no system call state (orig_rax is -1) and no fs_base but
         * the one the thread's last stop gave */
        CAPTURE_PERF,
};

struct capture {
        pid_t pid;
        pid_t tid;
        enum capture_kind kind;
        uint64_t time_ns; /* CLOCK_REALTIME at the sample */
        struct user_regs_struct regs;
        bool bp_known; /* for CAPTURE_BLOCKED: regs.rbp was recovered */
        struct blocked_point blocked;
        uint64_t stack_start;  /* target address of stack[0]: SP - CAPTURE_RED_ZONE */
        size_t stack_len;      /* bytes valid in stack */
        size_t stack_capacity; /* size of the copy buffer, when allocated */
        uint8_t *stack;        /* NULL until capture__ready, and after a trim */
        /* Where this thread's stack ends, as far as unwinding needs it: the
         * highest address a complete walk read (capture__learn_stack_end),
         * 0 while unknown.  A thread's outermost frame stays put for its
         * whole life, so the next copy stops there instead of copying
         * stack_capacity bytes: the stop window is mostly this copy.  A
         * copy shortened this way sets stack_cut_at_hint. */
        uint64_t stack_end_hint;
        bool stack_cut_at_hint;
        struct capture_interp interp;
        /* The thread's span-context slot, or the slots it may have
         * claimed (context/context_reader.c), copied in the same window;
         * span_slot_len is 0 when none was copied. */
        uint8_t span_slot[CAPTURE_SPAN_SLOT_BYTES];
        size_t span_slot_len;
        /* The OTEP 4947 thread record (context/thread_context.c), copied
         * in the same window: thread_record_state says what was found
         * (0: nothing read, 1: no record, 2: thread_record_len bytes). */
        uint8_t thread_record_state;
        size_t thread_record_len;
        uint8_t thread_record[CAPTURE_THREAD_RECORD_BYTES];
};

/* The stack copy starts this far below SP: the x86-64 red zone, where a
 * leaf function keeps live data (and CFI may say registers are saved). */
#define CAPTURE_RED_ZONE 128

/* Sets the stack buffer's size; nothing is allocated before
 * capture__ready.  Always 0. */
int capture__init(struct capture *capture, size_t stack_capacity);
void capture__release(struct capture *capture);

/* Allocates the buffers a capture fills (the stack copy, and the
 * interpreter buffer at its reserved size) if a trim gave them back or
 * they were never allocated.  Outside the stop window only: before the
 * interrupt, or before a blocked thread's copy.  0 or -ENOMEM (a capture
 * without a stack buffer copies no stack). */
int capture__ready(struct capture *capture);

/* For a thread that is idle (its last stack is reused): frees the stack
 * buffer and the interpreter buffer with what they hold (what a reused
 * sample needs was kept with its result).  The next capture__ready
 * allocates them again.  Returns the bytes given back. */
size_t capture__trim(struct capture *capture);

/* Grows the stack buffer (after the resume, never inside the stop window)
 * for a thread whose stack did not fit.  0 or -ENOMEM (buffer unchanged). */
int capture__grow_stack(struct capture *capture, size_t stack_capacity);

/* Just before the interrupt, outside the stop window: one 8-byte read of
 * the running thread's last stack copy, so that the first read inside the
 * window is not the tracer's first touch of the target since it slept
 * (that one costs ~10 µs on a VM, the next ones ~1 µs: measured).  Does
 * nothing before the first capture. */
void capture__warm_up(const struct capture *capture);

/* For a thread in a ptrace-stop, in two steps: begin (no system call)
 * empties the capture for this sample, so that memory-only copies
 * (interpreter, span slot) may come before the registers; then registers
 * and the stack above SP.  The first ptrace request after a stop waits
 * until the thread is off its CPU, so a copy made between the two steps
 * costs the thread no pause of its own. */
void capture__begin_stopped(struct capture *capture, pid_t pid, pid_t tid);
int capture__copy_registers_and_stack(struct capture *capture);

/* For a thread blocked in a syscall: SP/PC from /proc, the stack above SP. */
int capture__from_blocked(struct capture *capture, pid_t pid, pid_t tid,
                          const struct blocked_point *point);

/* Asks for an interpreter buffer of at least `capacity` bytes, which the
 * next capture__ready allocates: a thread that stays idle, whose last
 * stack is reused, never holds one. */
void capture__reserve_interp(struct capture *capture, size_t capacity);

/* Appends n (<= CAPTURE_INTERP_REGIONS in all) target ranges to the
 * interpreter copy with one process_vm_readv().  Ranges that do not fit in
 * the buffer are cut short.  Returns the number of bytes copied or -errno. */
ssize_t capture__copy_interp(struct capture *capture, const uint64_t *addresses, const size_t *lens,
                             size_t n);

/* The copied bytes for [address, address + len), or NULL when no region
 * holds all of them. */
const uint8_t *capture__interp_at(const struct capture *capture, uint64_t address, size_t len);

/* Copies `len` bytes of span-context slots (at most
 * CAPTURE_SPAN_SLOT_BYTES) at `address` with one process_vm_readv();
 * span_slot_len stays 0 unless all of them arrived.  0 or -errno. */
int capture__copy_span_slots(struct capture *capture, uint64_t address, size_t len);

/* After a complete unwind that read the stack up to `read_end`
 * (exclusive): later copies of this thread may stop there. */
void capture__learn_stack_end(struct capture *capture, uint64_t read_end);

/* After an unwind that needed memory beyond a copy cut at the hint: the
 * hint is wrong (the thread switched stacks); copy everything again. */
void capture__forget_stack_end(struct capture *capture);

/* Reads the 8-byte word at `address` from the copy; false outside it. */
bool capture__read_word(const struct capture *capture, uint64_t address, uint64_t *value);
