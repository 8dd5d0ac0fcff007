/* syscall_restart.c — see syscall_restart.h.
 *
 * The repair mirrors what the kernel itself does for -ERESTARTNOHAND: put
 * the syscall number back in RAX and step RIP back over the two-byte
 * `syscall` instruction.  Arguments are still in their registers, so the
 * call is re-issued unchanged. */
#include "attach/syscall_restart.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include "util/cleanup.h"

bool syscall_restart__is_transparent(long nr)
{
        switch (nr) {
        case SYS_futex:
        case SYS_nanosleep:
        case SYS_clock_nanosleep:
        case SYS_poll:
        case SYS_ppoll:
        case SYS_select:
        case SYS_pselect6:
        case SYS_wait4:
        case SYS_waitid:
        case SYS_pause:
                return true;
        default:
                return false;
        }
}

/* Whether the call in `regs` is one that fails with EINTR after a stop and
 * can be re-issued with the same arguments.  With a timeout, re-issuing
 * restarts it: the thread was seen running just before the interrupt, so
 * it had waited at most the few microseconds between our /proc read and
 * the interrupt (a spurious wake-up inside the call is the one case where
 * the wait could stretch, and never beyond one more full timeout).  That
 * is far less visible to the program than an EINTR it never asked for. */
static bool reissuable(const struct user_regs_struct *regs)
{
        switch ((long)regs->orig_rax) {
        case SYS_epoll_wait:
        case SYS_epoll_pwait:
        case SYS_epoll_pwait2:
        case SYS_semtimedop:
        case SYS_semop:
        case SYS_io_getevents:
        case SYS_rt_sigtimedwait:
        case SYS_msgrcv:
        case SYS_msgsnd:
                return true;
        default:
                return false;
        }
}

static bool signal_pending(pid_t pid, pid_t tid)
{
        char path[96], line[128];
        uint64_t mask;
        bool pending = true; /* unreadable: assume a real signal, keep EINTR */
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
        f = fopen(path, "re");
        if (!f)
                return true;
        while (fgets(line, sizeof(line), f)) {
                if (sscanf(line, "SigPnd: %" SCNx64, &mask) == 1 ||
                    sscanf(line, "ShdPnd: %" SCNx64, &mask) == 1) {
                        if (mask)
                                return true;
                        pending = false;
                }
        }
        return pending;
}

bool syscall_restart__repair_eintr(pid_t pid, pid_t tid, struct user_regs_struct *regs)
{
        if ((long)regs->rax != -EINTR || (long)regs->orig_rax < 0)
                return false;
        if (!reissuable(regs) || signal_pending(pid, tid))
                return false;
        regs->rax = regs->orig_rax;
        regs->rip -= 2;
        return ptrace(PTRACE_SETREGS, tid, NULL, regs) == 0;
}
