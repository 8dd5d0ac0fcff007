/* mapping_pool.h — interned struct mapped_file objects. */
#pragma once

#include "symbolize/hashtab.h"
#include "symbolize/symbolizer.h"

struct mapping_pool {
        struct hashtab tab;
        uint64_t seed;
};

void mapping_pool__init(struct mapping_pool *pool, uint64_t seed);
void mapping_pool__clear(struct mapping_pool *pool);
/* The unique object equal to `m` (path and build_id_hex must be interned
 * strings; has_debug_info is not part of the identity).  NULL when out of
 * memory. */
struct mapped_file *mapping_pool__intern(struct mapping_pool *pool, const struct mapped_file *m);
