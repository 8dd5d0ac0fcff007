/* string_pool.h — interned, immutable strings that live as long as the
 * symbolizer, or, interned counted, as long as their references. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util/hashtab.h"

/* Longer strings (hostile symbol or file names) are truncated. */
#define STRING_POOL_MAX_LEN 4096

struct string_pool {
        struct hashtab tab;
        uint64_t seed;
};

void string_pool__init(struct string_pool *pool, uint64_t seed);
void string_pool__clear(struct string_pool *pool);
/* Returns the unique copy of s[0..len) (truncated to STRING_POOL_MAX_LEN),
 * "" for NULL or empty input, or NULL when out of memory. */
const char *string_pool__intern_len(struct string_pool *pool, const char *s, size_t len);
const char *string_pool__intern(struct string_pool *pool, const char *s);
/* The same string, with one counted reference taken: it is freed with the
 * last string_pool__unref() unless it was (or is later) also interned with
 * the plain functions above.  "" for NULL or empty input, NULL when out of
 * memory (no reference is then taken). */
const char *string_pool__intern_counted(struct string_pool *pool, const char *s);
/* Drops a reference of string_pool__intern_counted(); "" and NULL are
 * ignored. */
void string_pool__unref(struct string_pool *pool, const char *s);
