/* line_cache.c — the memo that makes repeated symbolization cheap.
 *
 * Profiles hit the same few thousand addresses over and over, in many
 * processes running the same binaries.  DWARF lookups (CU search, scope
 * walk, line table) cost microseconds; a hash lookup costs nanoseconds.
 * Entries are keyed by the process-independent elf_file record and the
 * address relative to the module's load bias, and hold only interned string
 * pointers, so an entry is a few hundred bytes at most.  The bound is
 * enforced crudely: when the cache is full it is emptied.  Hot addresses
 * come back within one profiling period, which is cheaper to pay than LRU
 * bookkeeping on every hit. */
#include "symbolize/line_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

struct cached_lines {
        struct hash_node node;
        const struct elf_file *file;
        uint64_t rel;
        size_t n_lines;
        struct symbol_line lines[];
};

struct line_key {
        const struct elf_file *file;
        uint64_t rel;
};

static bool cached_lines__eq(const struct hash_node *node, const void *key)
{
        const struct cached_lines *c = container_of(node, struct cached_lines, node);
        const struct line_key *k = key;

        return c->file == k->file && c->rel == k->rel;
}

static void cached_lines__free(struct hash_node *node)
{
        free(container_of(node, struct cached_lines, node));
}

static uint64_t line_key__hash(const struct line_cache *cache, const struct line_key *k)
{
        return hash__u64(cache->seed ^ (uintptr_t)k->file, k->rel);
}

void line_cache__init(struct line_cache *cache, uint64_t seed, size_t max_entries)
{
        *cache = (struct line_cache){.seed = seed, .max_entries = max_entries};
}

void line_cache__clear(struct line_cache *cache)
{
        hashtab__clear(&cache->tab, cached_lines__free);
}

bool line_cache__lookup(const struct line_cache *cache, const struct elf_file *file, uint64_t rel,
                        struct symbolized_pc *out)
{
        struct line_key key = {.file = file, .rel = rel};
        struct hash_node *node;
        struct cached_lines *c;

        node = hashtab__find(&cache->tab, line_key__hash(cache, &key), cached_lines__eq, &key);
        if (!node)
                return false;
        c = container_of(node, struct cached_lines, node);
        out->n_lines = c->n_lines;
        memcpy(out->lines, c->lines, c->n_lines * sizeof(c->lines[0]));
        return true;
}

void line_cache__store(struct line_cache *cache, const struct elf_file *file, uint64_t rel,
                       const struct symbolized_pc *pc)
{
        struct line_key key = {.file = file, .rel = rel};
        size_t n = pc->n_lines;
        struct cached_lines *c;

        if (n == 0 || n > SYMBOL_MAX_INLINE)
                return;
        if (cache->tab.n_nodes >= cache->max_entries) {
                log_debug("line cache full (%zu entries), emptied", cache->tab.n_nodes);
                line_cache__clear(cache);
        }
        c = malloc(sizeof(*c) + n * sizeof(c->lines[0]));
        if (!c)
                return;
        c->file = file;
        c->rel = rel;
        c->n_lines = n;
        memcpy(c->lines, pc->lines, n * sizeof(c->lines[0]));
        if (hashtab__insert(&cache->tab, &c->node, line_key__hash(cache, &key)) < 0)
                free(c);
}
