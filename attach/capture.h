/* capture.h — everything copied out of one thread for one sample.
 *
 * A capture is filled while the thread is stopped (or while it is verified
 * blocked) and is all the later stages see: the unwinder reads stack memory
 * only from `stack`, never from the live process, because the thread has
 * moved on by then.  Buffers are allocated once per thread, so filling a
 * capture inside the stop window never allocates. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "attach/proc_thread.h"

enum capture_kind {
        CAPTURE_STOPPED, /* interrupted: all registers are known */
        CAPTURE_BLOCKED, /* blocked in a syscall: SP and PC (and maybe BP) */
};

struct capture {
        pid_t pid;
        pid_t tid;
        enum capture_kind kind;
        uint64_t time_ns; /* CLOCK_REALTIME at the sample */
        struct user_regs_struct regs;
        bool bp_known; /* for CAPTURE_BLOCKED: regs.rbp was recovered */
        struct blocked_point blocked;
        uint64_t stack_start; /* target address of stack[0] */
        size_t stack_len;     /* bytes valid in stack */
        size_t stack_capacity;
        uint8_t *stack;
};

/* Allocates the stack buffer once.  0 or -ENOMEM. */
int capture__init(struct capture *capture, size_t stack_capacity);
void capture__release(struct capture *capture);

/* For a thread in a ptrace-stop: registers and the stack above SP. */
int capture__from_stopped(struct capture *capture, pid_t pid, pid_t tid);

/* For a thread blocked in a syscall: SP/PC from /proc, the stack above SP. */
int capture__from_blocked(struct capture *capture, pid_t pid, pid_t tid,
                          const struct blocked_point *point);

/* Reads the 8-byte word at `address` from the copy; false outside it. */
bool capture__read_word(const struct capture *capture, uint64_t address, uint64_t *value);
