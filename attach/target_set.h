/* target_set.h — all targets of one tracer, and lookup of the thread a
 * waitpid() status belongs to. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "attach/target.h"

struct target_set {
        size_t n_targets, capacity;
        struct target **targets;
};

int target_set__add(struct target_set *set, struct target *target);

/* The target owning `tid` (and the thread, when already registered). */
struct target *target_set__find(struct target_set *set, pid_t tid, struct tthread **thread);

/* The target of a tid the kernel attached for us but we have not seen yet. */
struct target *target_set__owner_of_new_thread(struct target_set *set, pid_t tid);

size_t target_set__live_count(const struct target_set *set);
void target_set__free(struct target_set *set);
