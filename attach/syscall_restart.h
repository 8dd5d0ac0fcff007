/* syscall_restart.h — which blocked syscalls survive a ptrace interrupt.
 *
 * signal(7): after a stop, most blocking calls are restarted by the kernel,
 * but some (epoll_wait, semop, sigtimedwait, io_getevents, ...) return
 * EINTR to the program.  The sampler never interrupts a thread blocked in
 * one of those, and repairs the rare race where a thread entered one just
 * as it was interrupted. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <sys/user.h>

/* True when interrupting a thread blocked in `nr` is invisible to it: the
 * kernel restarts the call.  Only a short, known list qualifies. */
bool syscall_restart__is_transparent(long nr);

/* At an interrupt stop: if the thread's syscall just failed with EINTR only
 * because of our interrupt, rewind it so it is re-issued on resume.  Only
 * done when no signal is pending (a real signal's EINTR must stay).  A
 * call with a timeout starts its timeout again (see syscall_restart.c for
 * why that is bounded).  Returns true when the registers were rewritten. */
bool syscall_restart__repair_eintr(pid_t pid, pid_t tid, struct user_regs_struct *regs);
