/* string_pool.h — interned, immutable strings that live as long as the
 * symbolizer. */
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
