/* target_set.c — see target_set.h.  Lookups are linear over targets and
 * threads; sampling already walks every thread once per tick, so this adds
 * no new order of cost. */
#include "attach/target_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "attach/target_check.h"
#include "util/array.h"
#include "util/cleanup.h"

int target_set__add(struct target_set *set, struct target *target)
{
        if (ARRAY_RESERVE(set->targets, set->capacity, set->n_targets + 1) < 0)
                return -ENOMEM;
        set->targets[set->n_targets++] = target;
        return 0;
}

struct target *target_set__find(struct target_set *set, pid_t tid, struct tthread **thread)
{
        for (size_t i = 0; i < set->n_targets; i++) {
                struct target *target = set->targets[i];
                struct tthread *found = target->gone ? NULL : target__find_thread(target, tid);
                if (found) {
                        *thread = found;
                        return target;
                }
        }
        *thread = NULL;
        return NULL;
}

static pid_t tgid_of(pid_t tid)
{
        char path[64], line[128];
        int tgid = -1;
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "Tgid: %d", &tgid) == 1)
                        break;
        return tgid;
}

struct target *target_set__owner_of_new_thread(struct target_set *set, pid_t tid)
{
        pid_t tgid = tgid_of(tid);

        for (size_t i = 0; i < set->n_targets; i++)
                if (!set->targets[i]->gone && set->targets[i]->pid == tgid)
                        return set->targets[i];
        return NULL;
}

size_t target_set__live_count(const struct target_set *set)
{
        size_t live = 0;

        for (size_t i = 0; i < set->n_targets; i++)
                live += !set->targets[i]->gone;
        return live;
}

void target_set__free(struct target_set *set)
{
        for (size_t i = 0; i < set->n_targets; i++)
                target__free(set->targets[i]);
        free(set->targets);
        set->targets = NULL;
        set->n_targets = set->capacity = 0;
}
