/* string_pool.c — interning of every string the symbolizer hands out.
 *
 * Function names, source files, paths and build-ids repeat a lot (every
 * address of a function shares its name and file), and the public API
 * promises that strings stay valid until symbolizer__free().  Interning gives
 * both: one copy per distinct string, never freed before the pool, and equal
 * strings get equal pointers so other caches can compare keys by pointer.
 * The pool only grows; it is bounded by the number of distinct names in the
 * binaries that were symbolized, and each string by STRING_POOL_MAX_LEN. */
#include "util/string_pool.h"

#include <stdlib.h>
#include <string.h>

struct pooled_string {
        struct hash_node node;
        size_t len;
        char text[];
};

struct string_key {
        const char *s;
        size_t len;
};

static bool pooled_string__eq(const struct hash_node *node, const void *key)
{
        const struct pooled_string *ps = container_of(node, struct pooled_string, node);
        const struct string_key *k = key;

        return ps->len == k->len && memcmp(ps->text, k->s, k->len) == 0;
}

static void pooled_string__free(struct hash_node *node)
{
        free(container_of(node, struct pooled_string, node));
}

void string_pool__init(struct string_pool *pool, uint64_t seed)
{
        *pool = (struct string_pool){.seed = seed};
}

void string_pool__clear(struct string_pool *pool)
{
        hashtab__clear(&pool->tab, pooled_string__free);
}

const char *string_pool__intern_len(struct string_pool *pool, const char *s, size_t len)
{
        struct string_key key = {.s = s, .len = len};
        struct pooled_string *ps;
        struct hash_node *found;
        uint64_t hash;

        if (!s || len == 0)
                return "";
        if (key.len > STRING_POOL_MAX_LEN)
                key.len = STRING_POOL_MAX_LEN;
        hash = hash__bytes(pool->seed, s, key.len);
        found = hashtab__find(&pool->tab, hash, pooled_string__eq, &key);
        if (found)
                return container_of(found, struct pooled_string, node)->text;
        ps = malloc(sizeof(*ps) + key.len + 1);
        if (!ps)
                return NULL;
        ps->len = key.len;
        memcpy(ps->text, s, key.len);
        ps->text[key.len] = '\0';
        if (hashtab__insert(&pool->tab, &ps->node, hash) < 0) {
                free(ps);
                return NULL;
        }
        return ps->text;
}

const char *string_pool__intern(struct string_pool *pool, const char *s)
{
        return string_pool__intern_len(pool, s, s ? strnlen(s, STRING_POOL_MAX_LEN + 1) : 0);
}
