/* subprocesses.c — see subprocesses.h. */
#include "engine/subprocesses.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/proc_thread.h"
#include "attach/target_check.h"
#include "engine/event_pump.h"
#include "engine/process_tree.h"
#include "engine/profiled_target.h"
#include "util/clock.h"
#include "util/log.h"

/* How long the COMMAND may take from its release to its exec stop. */
#define EXEC_WAIT_NS (10ull * 1000 * 1000 * 1000)
#define EXEC_POLL_NS (10ull * 1000 * 1000)

static struct target_options options_of(const struct registry *registry)
{
        return (struct target_options){
            .stack_bytes = registry->config.stack_bytes,
            .max_depth = registry->config.max_depth,
            .follow_forks = registry->config.subprocesses,
        };
}

static bool is_target(struct registry *registry, pid_t pid)
{
        struct tthread *thread;
        struct target *target = target_set__find(&registry->targets, pid, &thread);

        return target && target->pid == pid && !target->gone;
}

static void attach_child(struct registry *registry, pid_t pid)
{
        struct target_options options = options_of(registry);
        struct target *target = NULL;
        char why[256];

        /* Forked after its parent was seized: the fork event adds it. */
        if (is_target(registry, pid) || target_check__tracer_of(pid) == gettid())
                return;
        if (target_check(pid, why, sizeof(why)) != TARGET_OK ||
            target__attach(pid, &options, &target, why, sizeof(why)) < 0) {
                log_warning("subprocess skipped: %s", why);
                return;
        }
        if (target_set__add(&registry->targets, target) < 0) {
                target__free(target); /* its threads are let go at their next stop */
                return;
        }
        log_info("attached to PID %d (%s), a subprocess, %zu threads", (int)pid, target->comm,
                 target->n_threads);
        (void)profiled_target__prepare(registry, target);
        event_pump__wait(registry, 0);
}

void subprocesses__attach_existing(struct registry *registry, pid_t root)
{
        pid_t children[CONFIG_MAX_PIDS];
        int n = process_tree__descendants(root, children, CONFIG_MAX_PIDS);

        if (n < 0) {
                log_warning("PID %d: cannot list its subprocesses: %s", (int)root, strerror(-n));
                return;
        }
        for (int i = 0; i < n; i++)
                attach_child(registry, children[i]);
}

/* A child that exits at once can have its exit reported before its
 * parent's fork event; a target made now would never see an exit. */
static bool has_exited(const struct target *target)
{
        char state = proc_thread__state(&target->threads[0]->files);

        return state == 0 || state == 'Z' || state == 'X';
}

void subprocesses__on_fork(struct registry *registry, struct target *parent, pid_t child)
{
        struct target *target;

        if (!registry->config.subprocesses)
                return; /* detached at its first stop */
        target = target__adopt(child, &parent->options);
        if (!target)
                return;
        if (has_exited(target) || target_set__add(&registry->targets, target) < 0) {
                target__free(target);
                return;
        }
        log_info("following PID %d, forked by PID %d", (int)child, (int)parent->pid);
}

void subprocesses__prepare_pending(struct registry *registry)
{
        uint64_t now = monotonic_ns();

        for (size_t i = 0; i < registry->targets.n_targets; i++) {
                struct target *target = registry->targets.targets[i];
                if (target->gone || target->releasing)
                        continue;
                if (target->owner) {
                        profiled_target__retry_python(registry, target, now);
                        continue;
                }
                (void)profiled_target__prepare(registry, target);
                event_pump__wait(registry, 0); /* may add targets: n is re-read */
        }
}

void subprocesses__start_command(struct registry *registry, struct target *target)
{
        uint64_t deadline = monotonic_ns() + EXEC_WAIT_NS;
        char go = 1;

        if (write(registry->command.go_fd, &go, 1) != 1)
                log_warning("cannot start the command: %s", strerror(errno));
        close(registry->command.go_fd);
        registry->command.go_fd = -1;
        while (!target->execed && !target->gone && monotonic_ns() < deadline)
                event_pump__wait(registry, EXEC_POLL_NS);
}
