/* Unit test of the /proc stat readers; the kernel is the oracle.  A
 * mapping made and unmapped by the test must move vsize, read through a
 * thread's stat file, by at least its size; startcode must lie at or
 * below this test's own main().  The NSpid parser gets the status lines of
 * a thread in a nested PID namespace, in /proc's own, and of old kernels;
 * this thread's own id must come back as itself, not nested. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/proc_thread.h"
#include "check.h"

#define MAPPING_BYTES (64ull << 20)

static void check_ns_tid(void)
{
        pid_t tid = (pid_t)syscall(SYS_gettid);
        bool nested = true;

        CHECK(proc_status__ns_tid("Name:\tx\nNSpid:\t4242\t17\nNSpgid:\t1\n", 4242, &nested) == 17);
        CHECK(nested);
        CHECK(proc_status__ns_tid("Name:\tx\nNSpid:\t4242\n", 4242, &nested) == 4242);
        CHECK(!nested);
        CHECK(proc_status__ns_tid("Name:\tx\nPid:\t4242\n", 4242, &nested) == 4242);
        CHECK(!nested);
        CHECK(proc_status__ns_tid("Name:\tx\nNSpid:\t\nNSpgid:\t5\n", 4242, &nested) == 0);
        CHECK(proc_status__ns_tid("Name:\tx\nNSpid:\t4242\t-3\n", 4242, &nested) == 0);
        CHECK(proc_thread__ns_tid(getpid(), tid, &nested) == tid);
        CHECK(!nested);
}

/* Kernel stacks as /proc/PID/task/TID/stack printed them on 6.18 for R
 * threads of tests/targets/target_split (woken in epoll_wait, preempted at
 * a call's return and at a timer interrupt's). */
static void check_kernel_wait(void)
{
        CHECK(kernel_wait__parse("[<0>] __schedule+0x4a1/0xd90\n[<0>] schedule+0x27/0xf0\n"
                                 "[<0>] schedule_hrtimeout_range_clock+0xf4/0x110\n"
                                 "[<0>] do_epoll_wait+0x4c5/0x500\n") == KERNEL_WAIT_WOKEN);
        CHECK(kernel_wait__parse("[<0>] __schedule+0x4a1/0xd90\n[<0>] schedule+0x27/0xf0\n"
                                 "[<0>] exit_to_user_mode_loop+0x6e/0x470\n"
                                 "[<0>] do_syscall_64+0x2ad/0x8d0\n") == KERNEL_WAIT_PREEMPTED);
        CHECK(kernel_wait__parse("[<0>] irqentry_exit_to_user_mode+0x1bb/0x1d0\n"
                                 "[<0>] asm_sysvec_apic_timer_interrupt+0x1a/0x20\n") ==
              KERNEL_WAIT_PREEMPTED);
        CHECK(kernel_wait__parse("[<0>] __cond_resched+0x1e/0x30\n[<0>] read_zero+0x5a/0x100\n") ==
              KERNEL_WAIT_PREEMPTED);
        CHECK(kernel_wait__parse("[<0>] ptrace_stop+0x1/0x2\n[<0>] get_signal+0x1/0x2\n"
                                 "[<0>] exit_to_user_mode_loop+0x1/0x2\n") == KERNEL_WAIT_UNKNOWN);
        CHECK(kernel_wait__parse("") == KERNEL_WAIT_UNKNOWN);
        CHECK(kernel_wait__parse("garbage") == KERNEL_WAIT_UNKNOWN);
        CHECK(kernel_wait__parse("[<0>] __schedule+0x1/0x2\n[<0>] schedule+0x1/0x2") ==
              KERNEL_WAIT_UNKNOWN);
}

int main(void)
{
        struct proc_thread_files files;
        uint64_t before, during, after;
        void *mapping;

        CHECK(proc_thread_files__open(&files, getpid(), (pid_t)syscall(SYS_gettid)) == 0);
        before = proc_thread__vsize(&files);
        CHECK(before > 0);
        mapping = mmap(NULL, MAPPING_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(mapping != MAP_FAILED);
        during = proc_thread__vsize(&files);
        CHECK(during >= before + MAPPING_BYTES);
        CHECK(munmap(mapping, MAPPING_BYTES) == 0);
        after = proc_thread__vsize(&files);
        CHECK(after + MAPPING_BYTES <= during);
        proc_thread_files__close(&files);
        CHECK(proc_process__start_code(getpid()) != 0);
        CHECK(proc_process__start_code(getpid()) <= (uint64_t)(uintptr_t)&main);
        check_ns_tid();
        check_kernel_wait();
        fprintf(stderr, "vsize %llu -> %llu -> %llu: ok\n", (unsigned long long)before,
                (unsigned long long)during, (unsigned long long)after);
        return 0;
}
