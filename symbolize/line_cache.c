/* line_cache.c — the memo that makes repeated symbolization cheap.
 *
 * Profiles hit the same few thousand addresses over and over, in many
 * processes running the same binaries.  DWARF lookups (CU search, scope
 * walk, line table) cost microseconds; a hash lookup costs nanoseconds.
 * Entries are keyed by the process-independent elf_file record and the
 * address relative to the module's load bias, and hold only interned string
 * pointers, so an entry is a few hundred bytes at most.
 *
 * Bounded by two generations (line_cache.h) rather than emptied when full,
 * as it was: emptying dropped the hot set too, and its refill went through
 * libdw again at the worst moment.  Rather than an LRU list: a hit in the
 * young generation, the common case, costs nothing beyond the lookup, and a
 * hit in the old one one unlink and one insert. */
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
        *cache = (struct line_cache){.seed = seed, .max_entries = max_entries ? max_entries : 1};
}

void line_cache__clear(struct line_cache *cache)
{
        hashtab__clear(&cache->young, cached_lines__free);
        hashtab__clear(&cache->old, cached_lines__free);
}

size_t line_cache__size(const struct line_cache *cache)
{
        return cache->young.n_nodes + cache->old.n_nodes;
}

/* Makes room for one more young entry: a full young generation becomes the
 * old one, and the old one is freed. */
static void line_cache__age(struct line_cache *cache)
{
        if (cache->young.n_nodes < cache->max_entries)
                return;
        log_debug("line cache: %zu young entries, %zu old ones evicted", cache->young.n_nodes,
                  cache->old.n_nodes);
        cache->evicted += cache->old.n_nodes;
        hashtab__clear(&cache->old, cached_lines__free);
        cache->old = cache->young;
        cache->young = (struct hashtab){0};
}

/* Links c into the young generation, or frees it. */
static void line_cache__insert_young(struct line_cache *cache, struct cached_lines *c,
                                     uint64_t hash)
{
        line_cache__age(cache);
        if (hashtab__insert(&cache->young, &c->node, hash) < 0)
                free(c);
}

static void cached_lines__copy_out(const struct cached_lines *c, struct symbolized_pc *out)
{
        out->n_lines = c->n_lines;
        memcpy(out->lines, c->lines, c->n_lines * sizeof(c->lines[0]));
}

bool line_cache__lookup(struct line_cache *cache, const struct elf_file *file, uint64_t rel,
                        struct symbolized_pc *out)
{
        struct line_key key = {.file = file, .rel = rel};
        uint64_t hash = line_key__hash(cache, &key);
        struct hash_node *node;

        node = hashtab__find(&cache->young, hash, cached_lines__eq, &key);
        if (node) {
                cached_lines__copy_out(container_of(node, struct cached_lines, node), out);
                return true;
        }
        node = hashtab__find(&cache->old, hash, cached_lines__eq, &key);
        if (!node)
                return false;
        /* Copied out first: moving it young may free it (out of memory). */
        cached_lines__copy_out(container_of(node, struct cached_lines, node), out);
        hashtab__remove(&cache->old, node);
        line_cache__insert_young(cache, container_of(node, struct cached_lines, node), hash);
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
        c = malloc(sizeof(*c) + n * sizeof(c->lines[0]));
        if (!c)
                return;
        c->file = file;
        c->rel = rel;
        c->n_lines = n;
        memcpy(c->lines, pc->lines, n * sizeof(c->lines[0]));
        line_cache__insert_young(cache, c, line_key__hash(cache, &key));
}
