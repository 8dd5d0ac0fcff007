/* libunwind_probe.c — what libunwind-ptrace would cost splunk-profd, measured
 * on a live process (bench/libunwind_probe.sh builds and runs it; not part of
 * the meson build, so the profiler itself does not link libunwind).
 *
 * libunwind-ptrace unwinds a thread by reading its registers and memory with
 * ptrace while the thread is stopped, one word per PTRACE_PEEKDATA.  Our
 * sampler instead copies registers and the top of the stack in the stop
 * window and unwinds the copy (libdwfl) after the resume.  For each thread
 * that /proc shows running (the only threads the sampler stops), every round
 * does both, in alternating order, and times the stop window the same way
 * the sampler does (attach/ptrace_events.c: from before PTRACE_INTERRUPT to
 * after PTRACE_CONT):
 *
 *   copy       PTRACE_GETREGS + one process_vm_readv of --stack-bytes
 *   libunwind  unw_init_remote + unw_step to the end (ptrace reads counted)
 *
 * At the end every thread (blocked ones too, once) is stopped for one
 * libunwind walk whose pcs are printed, so the script can compare them with
 * `splunk-profd dump --json` of the same threads.
 *
 * Output, one record a line (key=value, for the script):
 *   timing tid=T method=M n=N p50_us= p99_us= max_us= first_us= [unwind_p50_us= reads_p50=
 * reads_max=] stack tid=T state=S frames=N end=E pcs=0x..,0x..
 *
 * Usage: libunwind_probe [-n ROUNDS] [-i INTERVAL_MS] [-s STACK_BYTES] PID
 *
 * Only for the benchmark's own targets: threads are seized (never
 * PTRACE_ATTACH/SIGSTOP), resumed at once after each stop, and detached at
 * the end. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <libunwind-ptrace.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define MAX_FRAMES  1024

struct probe_thread {
        pid_t tid;
        bool seized;
        void *upt;           /* libunwind-ptrace's per-thread state */
        unsigned long reads; /* ptrace reads of the last walk */
        uint64_t *copy_ns;   /* stop window per round, copy method */
        uint64_t *unwind_ns; /* stop window per round, libunwind method */
        uint64_t *walk_ns;   /* time inside the libunwind walk alone */
        unsigned long *walk_reads;
        size_t n_copy, n_unwind;
};

struct probe {
        pid_t pid;
        size_t stack_bytes;
        unsigned char *stack_buffer; /* allocated before any stop */
        unw_addr_space_t space;
        struct probe_thread threads[MAX_THREADS];
        size_t n_threads;
};

static uint64_t monotonic_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The accessors are libunwind-ptrace's own, with the word reads counted:
 * each is one ptrace request on the stopped thread.  libunwind hands its
 * accessors the _UPT_create() state as `arg` (also from inside
 * _UPT_find_proc_info), so the count cannot travel in `arg`: it is this
 * tool's one static (the tool is single-threaded). */
static unsigned long ptrace_reads;

static int counted_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *value, int write,
                              void *arg)
{
        ptrace_reads++;
        return _UPT_access_mem(as, addr, value, write, arg);
}

static int counted_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *value, int write,
                              void *arg)
{
        ptrace_reads++;
        return _UPT_access_reg(as, reg, value, write, arg);
}

static int counted_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *value,
                                int write, void *arg)
{
        ptrace_reads++;
        return _UPT_access_fpreg(as, reg, value, write, arg);
}

static unw_accessors_t counted_accessors(void)
{
        unw_accessors_t accessors = _UPT_accessors;

        accessors.access_mem = counted_access_mem;
        accessors.access_reg = counted_access_reg;
        accessors.access_fpreg = counted_access_fpreg;
        return accessors;
}

static char thread_state(pid_t pid, pid_t tid)
{
        char path[64], buf[512], *paren;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
        f = fopen(path, "re");
        if (!f)
                return '?';
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        paren = strrchr(buf, ')');
        return paren && paren[1] == ' ' ? paren[2] : '?';
}

/* Waits for the interrupt stop of `tid`, re-injecting any signal that
 * arrives first.  Returns 0, or -1 when the thread is gone. */
static int wait_for_interrupt_stop(pid_t tid)
{
        for (;;) {
                int status;

                if (waitpid(tid, &status, __WALL) < 0)
                        return -1;
                if (WIFEXITED(status) || WIFSIGNALED(status))
                        return -1;
                if (WIFSTOPPED(status) && status >> 16 == PTRACE_EVENT_STOP)
                        return 0;
                if (WIFSTOPPED(status))
                        ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status));
        }
}

static uint64_t stop_copy(struct probe *probe, struct probe_thread *thread)
{
        struct user_regs_struct regs;
        uint64_t start = monotonic_ns();

        if (ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) < 0 ||
            wait_for_interrupt_stop(thread->tid) < 0)
                return 0;
        if (ptrace(PTRACE_GETREGS, thread->tid, NULL, &regs) == 0) {
                struct iovec local = {probe->stack_buffer, probe->stack_bytes};
                struct iovec remote = {(void *)(uintptr_t)(regs.rsp - 128), probe->stack_bytes};

                (void)process_vm_readv(thread->tid, &local, 1, &remote, 1, 0);
        }
        ptrace(PTRACE_CONT, thread->tid, NULL, NULL);
        return monotonic_ns() - start;
}

/* One libunwind-ptrace walk of a stopped thread; returns the frame count
 * and stores the pcs and the last unw_step result (0: outermost frame). */
static size_t walk(struct probe *probe, struct probe_thread *thread, unw_word_t *pcs,
                   size_t max_pcs, int *end)
{
        unw_cursor_t cursor;
        size_t n = 0;
        int r;

        ptrace_reads = 0;
        r = unw_init_remote(&cursor, probe->space, thread->upt);
        if (r < 0) {
                *end = r;
                return 0;
        }
        do {
                unw_word_t ip;

                if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || n >= max_pcs)
                        break;
                if (pcs)
                        pcs[n] = ip;
                n++;
        } while ((r = unw_step(&cursor)) > 0);
        thread->reads = ptrace_reads;
        *end = r;
        return n;
}

static uint64_t stop_unwind(struct probe *probe, struct probe_thread *thread, uint64_t *walk_ns)
{
        uint64_t start = monotonic_ns(), walk_start;
        int end;

        if (ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) < 0 ||
            wait_for_interrupt_stop(thread->tid) < 0)
                return 0;
        walk_start = monotonic_ns();
        walk(probe, thread, NULL, MAX_FRAMES, &end);
        *walk_ns = monotonic_ns() - walk_start;
        ptrace(PTRACE_CONT, thread->tid, NULL, NULL);
        return monotonic_ns() - start;
}

static int compare_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static int compare_ulong(const void *a, const void *b)
{
        unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

        return x < y ? -1 : x > y;
}

static double percentile_us(const uint64_t *sorted, size_t n, double p)
{
        size_t rank = (size_t)(p * (double)n);

        return n ? (double)sorted[rank < n ? rank : n - 1] / 1000.0 : 0;
}

static void print_timing(pid_t tid, const char *method, uint64_t *ns, size_t n)
{
        uint64_t first = n ? ns[0] : 0;

        qsort(ns, n, sizeof(*ns), compare_u64);
        printf("timing tid=%d method=%s n=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f first_us=%.1f",
               (int)tid, method, n, percentile_us(ns, n, 0.5), percentile_us(ns, n, 0.99),
               n ? (double)ns[n - 1] / 1000.0 : 0, (double)first / 1000.0);
}

static void print_thread_timings(struct probe_thread *thread)
{
        if (thread->n_copy) {
                print_timing(thread->tid, "copy", thread->copy_ns, thread->n_copy);
                putchar('\n');
        }
        if (thread->n_unwind) {
                size_t n = thread->n_unwind;

                print_timing(thread->tid, "libunwind", thread->unwind_ns, n);
                qsort(thread->walk_ns, n, sizeof(*thread->walk_ns), compare_u64);
                qsort(thread->walk_reads, n, sizeof(*thread->walk_reads), compare_ulong);
                printf(" unwind_p50_us=%.1f reads_p50=%lu reads_max=%lu\n",
                       percentile_us(thread->walk_ns, n, 0.5), thread->walk_reads[n / 2],
                       thread->walk_reads[n - 1]);
        }
}

static int seize_threads(struct probe *probe)
{
        char path[64];
        struct dirent *entry;
        DIR *dir;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)probe->pid);
        dir = opendir(path);
        if (!dir)
                return -errno;
        while ((entry = readdir(dir)) && probe->n_threads < MAX_THREADS) {
                struct probe_thread *thread = &probe->threads[probe->n_threads];
                pid_t tid = (pid_t)atoi(entry->d_name);

                if (tid <= 0)
                        continue;
                if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
                        fprintf(stderr, "libunwind_probe: cannot seize %d: %m\n", (int)tid);
                        continue;
                }
                thread->tid = tid;
                thread->seized = true;
                /* Set up before any stop: _UPT_create allocates. */
                thread->upt = _UPT_create(tid);
                probe->n_threads++;
        }
        closedir(dir);
        return probe->n_threads ? 0 : -ESRCH;
}

static bool allocate_rounds(struct probe_thread *thread, size_t rounds)
{
        thread->copy_ns = calloc(rounds, sizeof(*thread->copy_ns));
        thread->unwind_ns = calloc(rounds, sizeof(*thread->unwind_ns));
        thread->walk_ns = calloc(rounds, sizeof(*thread->walk_ns));
        thread->walk_reads = calloc(rounds, sizeof(*thread->walk_reads));
        return thread->copy_ns && thread->unwind_ns && thread->walk_ns && thread->walk_reads;
}

static void sample_round(struct probe *probe, size_t round)
{
        for (size_t i = 0; i < probe->n_threads; i++) {
                struct probe_thread *thread = &probe->threads[i];
                uint64_t copy = 0, unwind = 0, walk_ns = 0;

                if (thread_state(probe->pid, thread->tid) != 'R')
                        continue; /* the sampler never stops a blocked thread */
                if (round % 2) {
                        copy = stop_copy(probe, thread);
                        unwind = stop_unwind(probe, thread, &walk_ns);
                } else {
                        unwind = stop_unwind(probe, thread, &walk_ns);
                        copy = stop_copy(probe, thread);
                }
                if (copy)
                        thread->copy_ns[thread->n_copy++] = copy;
                if (unwind) {
                        thread->walk_reads[thread->n_unwind] = thread->reads;
                        thread->walk_ns[thread->n_unwind] = walk_ns;
                        thread->unwind_ns[thread->n_unwind++] = unwind;
                }
        }
}

/* One libunwind walk of every thread, blocked ones included, printed. */
static void print_stacks(struct probe *probe)
{
        static unw_word_t pcs[MAX_FRAMES];

        for (size_t i = 0; i < probe->n_threads; i++) {
                struct probe_thread *thread = &probe->threads[i];
                char state = thread_state(probe->pid, thread->tid);
                size_t n;
                int end;

                if (ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) < 0 ||
                    wait_for_interrupt_stop(thread->tid) < 0)
                        continue;
                n = walk(probe, thread, pcs, MAX_FRAMES, &end);
                ptrace(PTRACE_CONT, thread->tid, NULL, NULL);
                printf("stack tid=%d state=%c frames=%zu end=%d pcs=", (int)thread->tid, state, n,
                       end);
                for (size_t f = 0; f < n; f++)
                        printf("%s0x%lx", f ? "," : "", (unsigned long)pcs[f]);
                putchar('\n');
        }
}

static void detach_threads(struct probe *probe)
{
        for (size_t i = 0; i < probe->n_threads; i++) {
                struct probe_thread *thread = &probe->threads[i];

                if (thread->seized && ptrace(PTRACE_INTERRUPT, thread->tid, NULL, NULL) == 0 &&
                    wait_for_interrupt_stop(thread->tid) == 0)
                        ptrace(PTRACE_DETACH, thread->tid, NULL, NULL);
                if (thread->upt)
                        _UPT_destroy(thread->upt);
                free(thread->copy_ns);
                free(thread->unwind_ns);
                free(thread->walk_ns);
                free(thread->walk_reads);
        }
}

int main(int argc, char **argv)
{
        static struct probe probe;
        unw_accessors_t accessors;
        size_t rounds = 200;
        long interval_ms = 10;
        int opt;

        probe.stack_bytes = 32768;
        while ((opt = getopt(argc, argv, "n:i:s:")) != -1) {
                if (opt == 'n')
                        rounds = strtoul(optarg, NULL, 10);
                else if (opt == 'i')
                        interval_ms = strtol(optarg, NULL, 10);
                else if (opt == 's')
                        probe.stack_bytes = strtoul(optarg, NULL, 10);
                else
                        goto usage;
        }
        if (optind + 1 != argc || rounds == 0 || probe.stack_bytes == 0)
                goto usage;
        probe.pid = (pid_t)atoi(argv[optind]);
        probe.stack_buffer = malloc(probe.stack_bytes);
        accessors = counted_accessors();
        probe.space = unw_create_addr_space(&accessors, 0);
        if (!probe.stack_buffer || !probe.space)
                return 1;
        /* The cheapest setting for libunwind: unwind info cached across walks. */
        unw_set_caching_policy(probe.space, UNW_CACHE_GLOBAL);
        if (seize_threads(&probe) < 0) {
                fprintf(stderr, "libunwind_probe: no thread of %d seized\n", (int)probe.pid);
                return 1;
        }
        for (size_t i = 0; i < probe.n_threads; i++)
                if (!allocate_rounds(&probe.threads[i], rounds))
                        return 1;
        for (size_t round = 0; round < rounds; round++) {
                struct timespec pause = {0, interval_ms * 1000000l};

                sample_round(&probe, round);
                nanosleep(&pause, NULL);
        }
        for (size_t i = 0; i < probe.n_threads; i++)
                print_thread_timings(&probe.threads[i]);
        print_stacks(&probe);
        detach_threads(&probe);
        unw_destroy_addr_space(probe.space);
        free(probe.stack_buffer);
        return 0;
usage:
        fprintf(stderr,
                "usage: libunwind_probe [-n ROUNDS] [-i INTERVAL_MS] [-s STACK_BYTES] PID\n");
        return 2;
}
