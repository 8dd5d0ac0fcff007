/* mapping_pool.h — interned struct mapped_file objects. */
#pragma once

#include "util/hashtab.h"
#include "symbolize/symbol.h"

struct mapping_pool {
        struct hashtab tab;
        uint64_t seed;
        uint64_t last_serial;
};

void mapping_pool__init(struct mapping_pool *pool, uint64_t seed);
void mapping_pool__clear(struct mapping_pool *pool);
/* The unique object equal to `m` (path and build_id_hex must be interned
 * strings; has_debug_info and serial are not part of the identity), with
 * one more reference, which the caller gives back with
 * mapping_pool__unref.  NULL when out of memory. */
struct mapped_file *mapping_pool__intern(struct mapping_pool *pool, const struct mapped_file *m);
/* Drops a reference from mapping_pool__intern; the last one frees it. */
void mapping_pool__unref(struct mapping_pool *pool, struct mapped_file *m);
