/* proc_thread.h — what /proc says about one thread, read without stopping
 * it: scheduler state, the syscall it is blocked in (with SP and PC), its
 * run count and its name.
 *
 * Files are opened once per thread and re-read with pread(), because the
 * sampler reads them for every thread on every tick. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_thread_files {
        int stat_fd;
        int syscall_fd;
        int schedstat_fd;
        int comm_fd;
        /* /proc/.../stack, opened on first use (proc_thread__kernel_wait):
         * KSTACK_UNOPENED until then, -1 where it cannot be read. */
        int kstack_fd;
};

#define KSTACK_UNOPENED (-2)

/* What /proc/PID/task/TID/syscall reports for a thread that is not running. */
struct blocked_point {
        long syscall_nr; /* -1: blocked, but not in a syscall */
        uint64_t args[6];
        uint64_t sp;
        uint64_t pc;
};

enum proc_syscall_result {
        PROC_SYSCALL_BLOCKED, /* *point is filled */
        PROC_SYSCALL_RUNNING,
        PROC_SYSCALL_GONE, /* thread exited or file unreadable */
};

int proc_thread_files__open(struct proc_thread_files *files, pid_t pid, pid_t tid);
void proc_thread_files__close(struct proc_thread_files *files);

/* One-letter state from /proc/.../stat ('R', 'S', 'D', 'T', 't', 'Z', ...),
 * or 0 when the thread is gone. */
char proc_thread__state(const struct proc_thread_files *files);

enum proc_syscall_result proc_thread__syscall(const struct proc_thread_files *files,
                                              struct blocked_point *point);

/* How many times the thread was scheduled onto a CPU (schedstat's third
 * field, or the sum of context switches where schedstat is missing).  A
 * blocked thread whose count is unchanged has not run in between.  Returns
 * false when unreadable. */
bool proc_thread__run_count(const struct proc_thread_files *files, pid_t pid, pid_t tid,
                            uint64_t *count);

/* The run count from schedstat alone (CPU time plus slices): it changes
 * as soon as the thread is put on a CPU, so an unchanged key means the
 * thread has not run since.  False when schedstat is unavailable or
 * reads all zeros (scheduler statistics off). */
bool proc_thread__sched_key(const struct proc_thread_files *files, uint64_t *key);

/* The kernel's scheduler accounting of one thread
 * (/proc/PID/task/TID/schedstat). */
struct proc_schedstat {
        /* Time on a CPU (sum_exec_runtime).  Brought up to date when the
         * thread leaves a CPU and at each scheduler tick, so for a thread
         * on a CPU it lags by up to one tick. */
        uint64_t on_cpu_ns;
        /* Time spent runnable, waiting for a CPU (run_delay).  A wait is
         * added when it ends, i.e. when the thread arrives on a CPU: the
         * wait in progress is not in it. */
        uint64_t run_delay_ns;
        uint64_t arrivals; /* times put on a CPU (pcount) */
};

/* Reads schedstat.  False when unavailable or all zeros (scheduler
 * statistics compiled out). */
bool proc_thread__schedstat(const struct proc_thread_files *files, struct proc_schedstat *out);

/* Why a thread that /proc calls running (R) is off its CPU, from its
 * kernel stack (/proc/PID/task/TID/stack: root, CAP_SYS_ADMIN). */
enum kernel_wait {
        KERNEL_WAIT_UNKNOWN,   /* unreadable, on a CPU (the stack is stale) or
                                * already in its ptrace-stop */
        KERNEL_WAIT_PREEMPTED, /* taken off a CPU while it ran: at a system call's
                                * return, an interrupt's return or a cond_resched */
        KERNEL_WAIT_WOKEN,     /* woken from a sleep it has not yet returned from */
};

/* Reads the kernel stack to tell a preempted thread from a woken one
 * (the sampler reads it right after the interrupt).
 * A thread stopped at a system call's exit was in that call either way;
 * only a preempted one spent CPU there (the call's own work), so only its
 * sample may be charged CPU.  KERNEL_WAIT_UNKNOWN without the privilege
 * (the file is then not tried again). */
enum kernel_wait proc_thread__kernel_wait(struct proc_thread_files *files, pid_t pid, pid_t tid);

/* The parser behind proc_thread__kernel_wait, on the file's text (one
 * "[<0>] function+0x1/0x2" line per frame, innermost first). */
enum kernel_wait kernel_wait__parse(const char *text);

/* Thread name (comm), NUL-terminated, at most 15 characters. */
bool proc_thread__comm(const struct proc_thread_files *files, char name[16]);

/* The thread's id in the PID namespace it lives in: the last NSpid entry
 * of /proc/PID/task/TID/status, the id the process itself sees (gettid(),
 * and so every thread id it stores in its memory).  *nested is set when
 * that namespace is not /proc's own (NSpid has more than one entry).  tid
 * itself, not nested, on kernels without NSpid (before 4.1); 0 when the
 * file is unreadable. */
pid_t proc_thread__ns_tid(pid_t pid, pid_t tid, bool *nested);

/* Parses the NSpid line of a status text as proc_thread__ns_tid does;
 * exposed for unit tests. */
pid_t proc_status__ns_tid(const char *text, pid_t tid, bool *nested);

/* Parses one line of /proc/.../syscall; exposed for unit tests. */
enum proc_syscall_result proc_syscall__parse(const char *text, struct blocked_point *point);

/* The process's virtual memory size in bytes (vsize, field 23 of
 * /proc/.../stat; any thread's file will do, the address space is
 * shared), or 0 when unreadable.  Nearly every mmap, munmap and brk
 * moves it, so it tells cheaply whether the maps may have changed. */
uint64_t proc_thread__vsize(const struct proc_thread_files *files);

/* An address inside the main executable's code (startcode from
 * /proc/PID/stat), or 0 when unreadable. */
uint64_t proc_process__start_code(pid_t pid);
