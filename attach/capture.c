/* capture.c — the work done inside the stop window, and nothing else.
 *
 * For a stopped thread: PTRACE_GETREGS and one process_vm_readv() of the
 * stack from SP upwards.  For a blocked thread: the same copy, with SP and
 * PC taken from /proc/.../syscall.  No allocation, no file I/O beyond the
 * one syscall each, no symbol work: those happen after the resume. */
#include "attach/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <time.h>

#include "attach/remote_memory.h"

int capture__init(struct capture *capture, size_t stack_capacity)
{
        memset(capture, 0, sizeof(*capture));
        capture->stack = malloc(stack_capacity);
        if (!capture->stack)
                return -ENOMEM;
        capture->stack_capacity = stack_capacity;
        return 0;
}

void capture__release(struct capture *capture)
{
        free(capture->stack);
        capture->stack = NULL;
        capture->stack_capacity = 0;
}

static uint64_t realtime_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void copy_stack(struct capture *capture, uint64_t sp)
{
        ssize_t n = remote_memory__read(capture->pid, sp, capture->stack, capture->stack_capacity);

        capture->stack_start = sp;
        capture->stack_len = n > 0 ? (size_t)n : 0;
}

int capture__from_stopped(struct capture *capture, pid_t pid, pid_t tid)
{
        capture->pid = pid;
        capture->tid = tid;
        capture->kind = CAPTURE_STOPPED;
        capture->time_ns = realtime_ns();
        if (ptrace(PTRACE_GETREGS, tid, NULL, &capture->regs) < 0)
                return -errno;
        capture->bp_known = true;
        copy_stack(capture, capture->regs.rsp);
        return 0;
}

int capture__from_blocked(struct capture *capture, pid_t pid, pid_t tid,
                          const struct blocked_point *point)
{
        capture->pid = pid;
        capture->tid = tid;
        capture->kind = CAPTURE_BLOCKED;
        capture->time_ns = realtime_ns();
        memset(&capture->regs, 0, sizeof(capture->regs));
        capture->regs.rsp = point->sp;
        capture->regs.rip = point->pc;
        capture->bp_known = false;
        capture->blocked = *point;
        copy_stack(capture, point->sp);
        return capture->stack_len > 0 ? 0 : -EFAULT;
}

bool capture__read_word(const struct capture *capture, uint64_t address, uint64_t *value)
{
        uint64_t offset;

        if (address < capture->stack_start)
                return false;
        offset = address - capture->stack_start;
        if (offset > capture->stack_len || capture->stack_len - offset < sizeof(*value))
                return false;
        memcpy(value, capture->stack + offset, sizeof(*value));
        return true;
}
