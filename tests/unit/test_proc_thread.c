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
        fprintf(stderr, "vsize %llu -> %llu -> %llu: ok\n", (unsigned long long)before,
                (unsigned long long)during, (unsigned long long)after);
        return 0;
}
