/* run_status.c — see run_status.h. */
#include "engine/run_status.h"

#include <stdlib.h>
#include <string.h>

#include "engine/registry.h"
#include "util/mailbox.h"

/* --thread: a thread name, or a tid when the value is a number. */
static pid_t resolve_thread_filter(const struct target_set *targets, const char *wanted)
{
        char *end;
        long tid = strtol(wanted, &end, 10);

        for (size_t t = 0; t < targets->n_targets; t++) {
                const struct target *target = targets->targets[t];
                for (size_t i = 0; i < target->n_threads; i++) {
                        const struct tthread *thread = target->threads[i];
                        if (strcmp(thread->name, wanted) == 0 ||
                            (*end == '\0' && thread->tid == (pid_t)tid))
                                return thread->tid;
                }
        }
        return -1;
}

void run_status__send(struct registry *registry)
{
        const struct target_set *targets = &registry->targets;
        struct run_status status = {
            .ticks = registry->stats.ticks,
            .samples = registry->stats.samples,
            .skipped = registry->stats.skipped,
            .threads = registry->stats.max_threads,
            .live_targets = target_set__live_count(targets),
        };

        if (targets->n_targets) {
                status.first_pid = targets->targets[0]->pid;
                memcpy(status.first_comm, targets->targets[0]->comm, sizeof(status.first_comm) - 1);
        }
        if (registry->config.thread_filter)
                status.thread_filter_tid =
                    resolve_thread_filter(targets, registry->config.thread_filter);
        (void)mailbox__send(&registry->status, &status);
}
