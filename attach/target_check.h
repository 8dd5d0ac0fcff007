/* target_check.h — decides, before any ptrace call, whether a PID may be
 * profiled, so the user gets a precise one-line reason instead of a bare
 * EPERM: no such process, a kernel thread, ourselves, or a process that
 * another tracer (gdb, strace, py-spy) already holds. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum target_check_result {
        TARGET_OK,
        TARGET_NO_SUCH_PROCESS,
        TARGET_NOT_A_PROCESS, /* a thread id that is not a thread-group leader */
        TARGET_KERNEL_THREAD,
        TARGET_SELF,
        TARGET_ALREADY_TRACED,
        TARGET_ZOMBIE,
};

/* Fills `why` with a one-line explanation when the result is not TARGET_OK. */
enum target_check_result target_check(pid_t pid, char *why, size_t why_size);

/* TracerPid from /proc/PID/status: 0 untraced, -1 unreadable. */
pid_t target_check__tracer_of(pid_t pid);

/* Whether thread `tid` has exited and awaits its reaping (state Z or X). */
bool target_check__is_zombie(pid_t tid);
