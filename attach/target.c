/* target.c — see target.h.
 *
 * Attaching races with the target creating threads: a thread created by a
 * not-yet-seized thread is not auto-attached.  So /proc/PID/task is listed
 * again until one pass finds nothing new.  A thread the kernel already
 * attached for us (its creator was seized first) makes PTRACE_SEIZE fail
 * with EPERM; it is recognised by its TracerPid being this thread. */
#include "attach/target.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "attach/target_check.h"
#include "util/array.h"
#include "util/cleanup.h"
#include "util/log.h"

#define ATTACH_MAX_PASSES  64
#define TARGET_MAX_THREADS 65536

static const long SEIZE_OPTIONS = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;
static const long FOLLOW_OPTIONS = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;

static void thread_free(struct tthread *thread)
{
        if (!thread)
                return;
        proc_thread_files__close(&thread->files);
        perf_sampler__close(&thread->perf);
        capture__release(&thread->capture);
        free(thread->last_stack.pcs);
        free(thread->last_stack.sps);
        free(thread);
}

#define STACK_INITIAL_FRAMES 32

bool thread_stack__reserve(struct thread_stack *stack, size_t n)
{
        size_t pcs_capacity = stack->capacity, sps_capacity = stack->capacity;

        if (n < STACK_INITIAL_FRAMES)
                n = STACK_INITIAL_FRAMES;
        /* From the same capacity both grow alike; a failure leaves the
         * old capacity, which both arrays still have. */
        if (ARRAY_RESERVE(stack->pcs, pcs_capacity, n) < 0 ||
            ARRAY_RESERVE(stack->sps, sps_capacity, n) < 0)
                return false;
        stack->capacity = pcs_capacity;
        return true;
}

static struct tthread *thread_new(pid_t pid, pid_t tid, const struct target_options *options)
{
        struct tthread *thread = calloc(1, sizeof(*thread));

        if (!thread)
                return NULL;
        thread->tid = tid;
        perf_sampler__init(&thread->perf);
        thread->files = (struct proc_thread_files){-1, -1, -1, -1, KSTACK_UNOPENED};
        if (!thread_stack__reserve(&thread->last_stack, 1) ||
            capture__init(&thread->capture, options->stack_bytes) < 0 ||
            proc_thread_files__open(&thread->files, pid, tid) < 0) {
                thread_free(thread);
                return NULL;
        }
        if (!proc_thread__comm(&thread->files, thread->name))
                snprintf(thread->name, sizeof(thread->name), "%d", (int)tid);
        return thread;
}

struct tthread *target__find_thread(struct target *target, pid_t tid)
{
        for (size_t i = 0; i < target->n_threads; i++)
                if (target->threads[i]->tid == tid)
                        return target->threads[i];
        return NULL;
}

pid_t target__ns_tid(struct target *target, struct tthread *thread)
{
        bool nested;
        pid_t id;

        if (thread->ns_tid)
                return thread->ns_tid;
        if (target->same_pid_ns)
                return thread->ns_tid = thread->tid;
        id = proc_thread__ns_tid(target->pid, thread->tid, &nested);
        if (id <= 0)
                return thread->tid; /* not kept: tried again next time */
        target->same_pid_ns = !nested;
        return thread->ns_tid = id;
}

struct tthread *target__add_thread(struct target *target, pid_t tid)
{
        struct tthread *thread = target__find_thread(target, tid);

        if (thread)
                return thread;
        if (target->n_threads >= TARGET_MAX_THREADS)
                return NULL;
        if (ARRAY_RESERVE(target->threads, target->threads_capacity, target->n_threads + 1) < 0)
                return NULL;
        thread = thread_new(target->pid, tid, &target->options);
        if (!thread)
                return NULL;
        if (target->perf.period_ns)
                (void)perf_sampler__open(&thread->perf, tid, &target->perf);
        target->threads[target->n_threads++] = thread;
        return thread;
}

int target__start_perf(struct target *target, const struct perf_sampler_config *config)
{
        bool first = true; /* the first open decides: the others differ only by chance */

        target->perf = *config;
        for (size_t i = 0; i < target->n_threads; i++) {
                struct tthread *thread = target->threads[i];
                if (thread->perf.fd >= 0 || thread->exited)
                        continue;
                int r = perf_sampler__open(&thread->perf, thread->tid, config);
                if (r < 0 && first) {
                        target__stop_perf(target);
                        return r;
                }
                first = false;
        }
        return 0;
}

void target__stop_perf(struct target *target)
{
        target->perf.period_ns = 0;
        for (size_t i = 0; i < target->n_threads; i++)
                perf_sampler__close(&target->threads[i]->perf);
}

void target__remove_thread(struct target *target, pid_t tid)
{
        for (size_t i = 0; i < target->n_threads; i++) {
                if (target->threads[i]->tid != tid)
                        continue;
                thread_free(target->threads[i]);
                target->threads[i] = target->threads[--target->n_threads];
                return;
        }
}

void target__reset_after_exec(struct target *target)
{
        while (target->n_threads > 0) {
                struct tthread *thread = target->threads[--target->n_threads];
                thread_free(thread);
        }
        target->execed = true;
        target->mem_pid = target->pid; /* the exec'ing thread became the leader */
        if (!target__add_thread(target, target->pid)) {
                target->gone = true;
                return;
        }
        /* The new program's name (a launched COMMAND was a copy of us). */
        snprintf(target->comm, sizeof(target->comm), "%s", target->threads[0]->name);
}

bool target__follow_leader_exit(struct target *target)
{
        struct tthread *leader = target__find_thread(target, target->pid);

        if (!leader || leader->exited || proc_thread__state(&leader->files) != 'Z')
                return false;
        leader->exited = true;
        for (size_t i = 0; i < target->n_threads; i++) {
                struct tthread *thread = target->threads[i];
                if (thread->exited || proc_thread__state(&thread->files) == 'Z')
                        continue;
                target->mem_pid = thread->tid;
                return true;
        }
        return false; /* the whole group is ending */
}

void target__free(struct target *target)
{
        if (!target)
                return;
        for (size_t i = 0; i < target->n_threads; i++)
                thread_free(target->threads[i]);
        free(target->threads);
        free(target);
}

struct target *target__adopt(pid_t pid, const struct target_options *options)
{
        struct target *target = calloc(1, sizeof(*target));

        if (!target)
                return NULL;
        target->pid = target->mem_pid = pid;
        target->options = *options;
        if (!target__add_thread(target, pid)) {
                target__free(target);
                return NULL;
        }
        snprintf(target->comm, sizeof(target->comm), "%s", target->threads[0]->name);
        return target;
}

void target__detach_thread(struct target *target, struct tthread *thread, int sig)
{
        (void)ptrace(PTRACE_DETACH, thread->tid, NULL, (void *)(long)sig);
        target__remove_thread(target, thread->tid);
        if (target->n_threads == 0)
                target->gone = target->released = true;
}

/* Seizes one thread.  1: newly seized, 0: already ours or gone, <0: error. */
static int seize_thread(pid_t tid, const struct target_options *options)
{
        long seize_options = SEIZE_OPTIONS | (options->follow_forks ? FOLLOW_OPTIONS : 0);

        int error;
        pid_t tracer;

        if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)seize_options) == 0)
                return 1;
        error = errno;
        if (error == ESRCH)
                return 0;
        if (error != EPERM)
                return -error;
        /* EPERM: already ours (auto-attached by a clone), already gone (an
         * exiting thread refuses the seize, then vanishes), a zombie (a
         * leader that called pthread_exit), or really forbidden. */
        if (target_check__is_zombie(tid))
                return 0;
        tracer = target_check__tracer_of(tid);
        if (tracer == gettid() || tracer < 0)
                return 0;
        return -EPERM;
}

/* One pass over /proc/PID/task.  Returns how many threads were new. */
static int attach_pass(struct target *target, char *why, size_t why_size)
{
        char path[64];
        struct dirent *entry;
        int added = 0;
        DIR *dir;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)target->pid);
        dir = opendir(path);
        if (!dir) {
                snprintf(why, why_size, "PID %d: no such process", (int)target->pid);
                return -ESRCH;
        }
        while ((entry = readdir(dir))) {
                pid_t tid = (pid_t)strtol(entry->d_name, NULL, 10);
                int r;
                if (tid <= 0 || target__find_thread(target, tid))
                        continue;
                r = seize_thread(tid, &target->options);
                if (r < 0) {
                        snprintf(why, why_size, "PID %d: cannot trace thread %d: %s%s",
                                 (int)target->pid, (int)tid, strerror(-r),
                                 r == -EPERM ? " (permission denied: run as root or with "
                                               "CAP_SYS_PTRACE, see ptrace_scope)"
                                             : "");
                        closedir(dir);
                        return r;
                }
                if (target__add_thread(target, tid))
                        added++;
        }
        closedir(dir);
        return added;
}

int target__attach(pid_t pid, const struct target_options *options, struct target **out, char *why,
                   size_t why_size)
{
        struct target *target = calloc(1, sizeof(*target));
        int r = 0;

        if (!target)
                return -ENOMEM;
        target->pid = target->mem_pid = pid;
        target->options = *options;
        for (int pass = 0; pass < ATTACH_MAX_PASSES; pass++) {
                r = attach_pass(target, why, why_size);
                if (r <= 0)
                        break;
        }
        if (r < 0 || target->n_threads == 0) {
                target__free(target);
                if (r == 0) {
                        snprintf(why, why_size, "PID %d: no such process", (int)pid);
                        r = -ESRCH;
                }
                return r;
        }
        struct tthread *leader = target__find_thread(target, pid);
        snprintf(target->comm, sizeof(target->comm), "%s",
                 leader ? leader->name : target->threads[0]->name);
        if (!leader) /* a zombie the seize refused: read through a live thread */
                target->mem_pid = target->threads[0]->tid;
        else
                (void)target__follow_leader_exit(target); /* a zombie seized */
        *out = target;
        return 0;
}
