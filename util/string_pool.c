/* string_pool.c — interning of every string the symbolizer hands out.
 *
 * Function names, source files, paths and build-ids repeat a lot (every
 * address of a function shares its name and file), and the public API
 * promises that strings stay valid until symbolizer__free().  Interning gives
 * both: one copy per distinct string, never freed before the pool, and equal
 * strings get equal pointers so other caches can compare keys by pointer.
 * Names from binaries are bounded by the distinct names in the binaries
 * symbolized, and each string by STRING_POOL_MAX_LEN.  Paths of mapped
 * files are not: a program unpacked to a fresh directory per run brings new
 * ones with every process.  Those are interned counted, and freed with the
 * last reference unless also interned plainly (pinned). */
#include "util/string_pool.h"

#include <stdlib.h>
#include <string.h>

struct pooled_string {
        struct hash_node node;
        size_t len;
        size_t refs; /* counted references (string_pool__intern_counted) */
        bool pinned; /* interned plainly: lives as long as the pool */
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

static struct pooled_string *string_pool__get(struct string_pool *pool, const char *s, size_t len)
{
        struct string_key key = {.s = s, .len = len};
        struct pooled_string *ps;
        struct hash_node *found;
        uint64_t hash;

        if (key.len > STRING_POOL_MAX_LEN)
                key.len = STRING_POOL_MAX_LEN;
        hash = hash__bytes(pool->seed, s, key.len);
        found = hashtab__find(&pool->tab, hash, pooled_string__eq, &key);
        if (found)
                return container_of(found, struct pooled_string, node);
        ps = malloc(sizeof(*ps) + key.len + 1);
        if (!ps)
                return NULL;
        *ps = (struct pooled_string){.len = key.len};
        memcpy(ps->text, s, key.len);
        ps->text[key.len] = '\0';
        if (hashtab__insert(&pool->tab, &ps->node, hash) < 0) {
                free(ps);
                return NULL;
        }
        return ps;
}

const char *string_pool__intern_len(struct string_pool *pool, const char *s, size_t len)
{
        struct pooled_string *ps;

        if (!s || len == 0)
                return "";
        ps = string_pool__get(pool, s, len);
        if (!ps)
                return NULL;
        ps->pinned = true;
        return ps->text;
}

const char *string_pool__intern(struct string_pool *pool, const char *s)
{
        return string_pool__intern_len(pool, s, s ? strnlen(s, STRING_POOL_MAX_LEN + 1) : 0);
}

const char *string_pool__intern_counted(struct string_pool *pool, const char *s)
{
        size_t len = s ? strnlen(s, STRING_POOL_MAX_LEN + 1) : 0;
        struct pooled_string *ps;

        if (len == 0)
                return "";
        ps = string_pool__get(pool, s, len);
        if (!ps)
                return NULL;
        ps->refs++;
        return ps->text;
}

void string_pool__unref(struct string_pool *pool, const char *s)
{
        struct pooled_string *ps;

        if (!s || !s[0])
                return;
        ps = container_of(s, struct pooled_string, text);
        if (ps->refs == 0 || --ps->refs > 0 || ps->pinned)
                return;
        hashtab__remove(&pool->tab, &ps->node);
        free(ps);
}
