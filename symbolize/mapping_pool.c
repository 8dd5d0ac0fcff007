/* mapping_pool.c — mapped_file objects shared by the address spaces.
 *
 * Equal mappings (same range, offset, file and build-id: a forked child,
 * or a process that re-reads /proc/PID/maps) share one object, so that a
 * `has_debug_info` learnt by one is known to all.  Each object is counted
 * by the address-space layouts that hold it and freed with the last one,
 * so that a daemon watching short-lived processes for months does not keep
 * every mapping it ever saw (ASLR makes each process's ranges new).
 * Callers must therefore not keep a mapping pointer past their address
 * space; caches key on `serial`, which is never reused, instead of the
 * address, which malloc may hand out again. */
#include "symbolize/mapping_pool.h"

#include <stdlib.h>

struct pooled_mapping {
        struct hash_node node;
        struct mapped_file m;
        size_t refs;
};

static bool pooled_mapping__eq(const struct hash_node *node, const void *key)
{
        const struct mapped_file *a = &container_of(node, struct pooled_mapping, node)->m;
        const struct mapped_file *b = key;

        return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
               a->path == b->path && a->build_id_hex == b->build_id_hex;
}

static void pooled_mapping__free(struct hash_node *node)
{
        free(container_of(node, struct pooled_mapping, node));
}

static uint64_t mapped_file__hash(const struct mapping_pool *pool, const struct mapped_file *m)
{
        uint64_t h = hash__u64(pool->seed, m->start);

        h = hash__u64(h, m->limit);
        h = hash__u64(h, m->offset);
        h = hash__u64(h, (uintptr_t)m->path);
        return hash__u64(h, (uintptr_t)m->build_id_hex);
}

void mapping_pool__init(struct mapping_pool *pool, uint64_t seed)
{
        *pool = (struct mapping_pool){.seed = seed};
}

void mapping_pool__clear(struct mapping_pool *pool)
{
        hashtab__clear(&pool->tab, pooled_mapping__free);
}

struct mapped_file *mapping_pool__intern(struct mapping_pool *pool, const struct mapped_file *m)
{
        uint64_t hash = mapped_file__hash(pool, m);
        struct hash_node *found = hashtab__find(&pool->tab, hash, pooled_mapping__eq, m);
        struct pooled_mapping *pm;

        if (found) {
                pm = container_of(found, struct pooled_mapping, node);
                pm->refs++;
                return &pm->m;
        }
        pm = malloc(sizeof(*pm));
        if (!pm)
                return NULL;
        pm->m = *m;
        pm->m.serial = ++pool->last_serial;
        pm->refs = 1;
        if (hashtab__insert(&pool->tab, &pm->node, hash) < 0) {
                free(pm);
                return NULL;
        }
        return &pm->m;
}

void mapping_pool__unref(struct mapping_pool *pool, struct mapped_file *m)
{
        struct pooled_mapping *pm = container_of(m, struct pooled_mapping, m);

        if (--pm->refs > 0)
                return;
        hashtab__remove(&pool->tab, &pm->node);
        free(pm);
}
