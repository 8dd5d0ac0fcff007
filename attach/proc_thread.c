/* proc_thread.c — non-stopping observation of a thread through /proc.
 *
 * The sampler must know, before it touches a thread, whether the thread is
 * on a CPU (then it is interrupted) or blocked in a syscall (then it is
 * sampled from /proc/.../syscall and a stack copy, never interrupted,
 * because an interrupt makes calls such as epoll_wait fail with EINTR in
 * the target).  All parsing here treats the kernel's text defensively and
 * reads into fixed buffers. */
#include "attach/proc_thread.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"

static int open_task_file(pid_t pid, pid_t tid, const char *name)
{
        char path[96];

        snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
        return open(path, O_RDONLY | O_CLOEXEC);
}

int proc_thread_files__open(struct proc_thread_files *files, pid_t pid, pid_t tid)
{
        files->stat_fd = open_task_file(pid, tid, "stat");
        files->syscall_fd = open_task_file(pid, tid, "syscall");
        files->schedstat_fd = open_task_file(pid, tid, "schedstat");
        files->comm_fd = open_task_file(pid, tid, "comm");
        files->kstack_fd = KSTACK_UNOPENED;
        if (files->stat_fd < 0 || files->syscall_fd < 0) {
                int saved = errno;
                proc_thread_files__close(files);
                return -saved;
        }
        return 0;
}

void proc_thread_files__close(struct proc_thread_files *files)
{
        int *fds[] = {&files->stat_fd, &files->syscall_fd, &files->schedstat_fd, &files->comm_fd,
                      &files->kstack_fd};

        for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
                if (*fds[i] >= 0)
                        close(*fds[i]);
                *fds[i] = -1;
        }
        files->kstack_fd = KSTACK_UNOPENED;
}

/* Reads a whole small /proc file into buf, NUL-terminated.  The length,
 * or -errno (-EBADF for a file that could not be opened). */
static ssize_t read_small(int fd, char *buf, size_t size)
{
        ssize_t n;

        if (fd < 0)
                return -EBADF;
        n = pread(fd, buf, size - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return n;
}

char proc_thread__state(const struct proc_thread_files *files)
{
        char buf[512];
        const char *close_paren;

        if (read_small(files->stat_fd, buf, sizeof(buf)) <= 0)
                return 0;
        /* comm may contain spaces and parentheses: the state follows the
         * last ')'. */
        close_paren = strrchr(buf, ')');
        if (!close_paren || close_paren[1] != ' ' || close_paren[2] == '\0')
                return 0;
        return close_paren[2];
}

enum proc_syscall_result proc_syscall__parse(const char *text, struct blocked_point *point)
{
        char *end;
        const char *p = text;
        uint64_t words[8];

        if (strncmp(text, "running", 7) == 0)
                return PROC_SYSCALL_RUNNING;
        point->syscall_nr = strtol(p, &end, 10);
        if (end == p)
                return PROC_SYSCALL_GONE;
        p = end;
        /* "-1 sp pc" when blocked outside a syscall, else "nr a1..a6 sp pc". */
        size_t want = point->syscall_nr == -1 ? 2 : 8;
        for (size_t i = 0; i < want; i++) {
                errno = 0;
                words[i] = strtoull(p, &end, 16);
                if (end == p || errno)
                        return PROC_SYSCALL_GONE;
                p = end;
        }
        memset(point->args, 0, sizeof(point->args));
        if (want == 8)
                memcpy(point->args, words, sizeof(point->args));
        point->sp = words[want - 2];
        point->pc = words[want - 1];
        return PROC_SYSCALL_BLOCKED;
}

enum proc_syscall_result proc_thread__syscall(const struct proc_thread_files *files,
                                              struct blocked_point *point)
{
        char buf[256];

        if (read_small(files->syscall_fd, buf, sizeof(buf)) <= 0)
                return PROC_SYSCALL_GONE;
        return proc_syscall__parse(buf, point);
}

static bool sum_context_switches(pid_t pid, pid_t tid, uint64_t *count)
{
        char path[96], line[256];
        uint64_t total = 0, value;
        int found = 0;
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
        f = fopen(path, "re");
        if (!f)
                return false;
        while (fgets(line, sizeof(line), f)) {
                if (sscanf(line, "voluntary_ctxt_switches: %" SCNu64, &value) == 1 ||
                    sscanf(line, "nonvoluntary_ctxt_switches: %" SCNu64, &value) == 1) {
                        total += value;
                        found++;
                }
        }
        *count = total;
        return found == 2;
}

/* Parses one unsigned decimal field and the blanks after it. */
static bool parse_u64(const char **p, uint64_t *value)
{
        char *end;

        errno = 0;
        *value = strtoull(*p, &end, 10);
        if (end == *p || errno)
                return false;
        *p = end;
        return true;
}

bool proc_thread__schedstat(const struct proc_thread_files *files, struct proc_schedstat *out)
{
        char buf[128];
        const char *p = buf;
        struct proc_schedstat s;

        if (read_small(files->schedstat_fd, buf, sizeof(buf)) <= 0 ||
            !parse_u64(&p, &s.on_cpu_ns) || !parse_u64(&p, &s.run_delay_ns) ||
            !parse_u64(&p, &s.arrivals) || (s.on_cpu_ns == 0 && s.arrivals == 0))
                return false;
        *out = s;
        return true;
}

bool proc_thread__sched_key(const struct proc_thread_files *files, uint64_t *key)
{
        struct proc_schedstat s;

        if (!proc_thread__schedstat(files, &s))
                return false;
        /* Both only grow: the CPU time moves when the thread is switched
         * out, the arrival count when it is switched in. */
        *key = s.on_cpu_ns + s.arrivals;
        return true;
}

bool proc_thread__run_count(const struct proc_thread_files *files, pid_t pid, pid_t tid,
                            uint64_t *count)
{
        if (proc_thread__sched_key(files, count))
                return true;
        return sum_context_switches(pid, tid, count);
}

/* The scheduler's own frames, above the frame that called into it. */
static bool is_scheduler_frame(const char *name, size_t len)
{
        static const char *const core[] = {"__schedule", "schedule", "__schedule_loop",
                                           "schedule_loop"};

        for (size_t i = 0; i < ARRAY_SIZE(core); i++)
                if (strlen(core[i]) == len && memcmp(name, core[i], len) == 0)
                        return true;
        return false;
}

/* Frames of a thread that already reached its ptrace-stop (the read
 * comes just after the interrupt): nothing is known of before. */
static bool is_stop_frame(const char *name, size_t len)
{
        static const char *const stops[] = {"ptrace_stop", "do_signal_stop", "get_signal",
                                            "ptrace_notify", "do_jobctl_trap"};

        for (size_t i = 0; i < ARRAY_SIZE(stops); i++)
                if (strlen(stops[i]) == len && memcmp(name, stops[i], len) == 0)
                        return true;
        return false;
}

/* Frames that call the scheduler to preempt, not to sleep. */
static bool is_preemption_frame(const char *name, size_t len)
{
        static const char *const prefixes[] = {"exit_to_user_mode",
                                               "irqentry_exit",
                                               "syscall_exit_to_user_mode",
                                               "preempt_schedule",
                                               "__cond_resched",
                                               "_cond_resched",
                                               "raw_irqentry_exit_cond_resched"};

        for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
                size_t n = strlen(prefixes[i]);
                if (len >= n && memcmp(name, prefixes[i], n) == 0)
                        return true;
        }
        return false;
}

enum kernel_wait kernel_wait__parse(const char *text)
{
        /* Bounded by the text (at most one read's worth) and the depth. */
        for (int depth = 0; depth < 16 && *text; depth++) {
                const char *name = strstr(text, "] ");
                const char *eol = strchr(text, '\n');
                if (!name || (eol && name > eol))
                        return KERNEL_WAIT_UNKNOWN;
                name += 2;
                size_t len = strcspn(name, "+\n");
                if (is_stop_frame(name, len))
                        return KERNEL_WAIT_UNKNOWN;
                if (!is_scheduler_frame(name, len))
                        return is_preemption_frame(name, len) ? KERNEL_WAIT_PREEMPTED
                                                              : KERNEL_WAIT_WOKEN;
                if (!eol)
                        break;
                text = eol + 1;
        }
        return KERNEL_WAIT_UNKNOWN;
}

enum kernel_wait proc_thread__kernel_wait(struct proc_thread_files *files, pid_t pid, pid_t tid)
{
        char buf[1024];

        if (files->kstack_fd == KSTACK_UNOPENED)
                files->kstack_fd = open_task_file(pid, tid, "stack");
        /* A running thread's stack reads empty. */
        if (read_small(files->kstack_fd, buf, sizeof(buf)) <= 0)
                return KERNEL_WAIT_UNKNOWN;
        return kernel_wait__parse(buf);
}

bool proc_thread__comm(const struct proc_thread_files *files, char name[16])
{
        char buf[64];
        ssize_t n = read_small(files->comm_fd, buf, sizeof(buf));

        if (n <= 0)
                return false;
        buf[strcspn(buf, "\n")] = '\0';
        buf[15] = '\0';
        memcpy(name, buf, 16);
        return true;
}

/* Field `field` of a stat file (numbered as in proc(5), a numeric field
 * past the state, i.e. >= 4), or 0 when unreadable.  comm (field 2) may
 * hold spaces and parentheses, so fields are counted from the last ')'. */
static uint64_t stat_number(int fd, unsigned int field)
{
        char buf[1024];
        const char *p;

        if (read_small(fd, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
                return 0;
        for (unsigned int at = 2; at < field; at++)
                if (!(p = strchr(p + 1, ' ')))
                        return 0;
        return strtoull(p + 1, NULL, 10);
}

uint64_t proc_thread__vsize(const struct proc_thread_files *files)
{
        return stat_number(files->stat_fd, 23);
}

uint64_t proc_process__start_code(pid_t pid)
{
        _cleanup_close_ int fd = open_task_file(pid, pid, "stat");

        return stat_number(fd, 26);
}

pid_t proc_status__ns_tid(const char *text, pid_t tid, bool *nested)
{
        const char *line = strstr(text, "\nNSpid:");
        pid_t last = tid;
        int entries = 0;

        *nested = false;
        if (!line)
                return tid;
        /* One id per PID namespace level (at most 33), up to the newline. */
        for (const char *p = line + 7;;) {
                char *end;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\n' || *p == '\0')
                        break;
                if (*p < '0' || *p > '9')
                        return 0; /* not an NSpid line we know */
                long id = strtol(p, &end, 10);
                if (id <= 0 || id > INT32_MAX)
                        return 0;
                last = (pid_t)id;
                entries++;
                p = end;
        }
        if (entries == 0)
                return 0;
        *nested = entries > 1;
        return last;
}

pid_t proc_thread__ns_tid(pid_t pid, pid_t tid, bool *nested)
{
        _cleanup_close_ int fd = open_task_file(pid, tid, "status");
        char text[4096];

        *nested = false;
        if (read_small(fd, text, sizeof(text)) <= 0)
                return 0;
        return proc_status__ns_tid(text, tid, nested);
}
