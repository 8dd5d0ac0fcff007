/* mapping_pool.c — mapped_file objects that outlive maps refreshes.
 *
 * Callers keep the `mapping` pointer of a symbolized_pc (the exporter turns
 * it into a pprof Mapping at the end of a profiling period), while the
 * address space may re-read /proc/PID/maps in between.  Interning the
 * objects in the symbolizer makes those pointers valid until
 * symbolizer__free(), and makes equal mappings share one object, so a
 * mapping pointer can also serve as a dedup key.  has_debug_info is a
 * property of the file, updated in place as lookups discover line info. */
#include "symbolize/mapping_pool.h"

#include <stdlib.h>

struct pooled_mapping {
        struct hash_node node;
        struct mapped_file m;
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

        if (found)
                return &container_of(found, struct pooled_mapping, node)->m;
        pm = malloc(sizeof(*pm));
        if (!pm)
                return NULL;
        pm->m = *m;
        if (hashtab__insert(&pool->tab, &pm->node, hash) < 0) {
                free(pm);
                return NULL;
        }
        return &pm->m;
}
