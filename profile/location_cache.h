/* location_cache.h — per-target map from a code address to the pprof
 * Location id already built for it.
 *
 * Steady-state sampling sees the same few thousand addresses again and
 * again; this turns each frame into one hash probe instead of a
 * symbolizer lookup plus the builder's deduplication.  The cache belongs
 * to one address space and one profile builder, and is emptied when the
 * address space's mappings change or when it is full. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct location_cache {
        uint64_t *addresses; /* 0 = empty slot */
        uint64_t *ids;
        size_t capacity; /* power of two */
        size_t used;
        uint64_t generation; /* address space generation the entries are for */
};

/* 0 or -ENOMEM. */
int location_cache__init(struct location_cache *cache, size_t capacity);
void location_cache__release(struct location_cache *cache);

/* Empties the cache if `generation` differs from the cached one. */
void location_cache__validate(struct location_cache *cache, uint64_t generation);

/* The Location id for `address`, or 0. */
uint64_t location_cache__get(const struct location_cache *cache, uint64_t address);
void location_cache__put(struct location_cache *cache, uint64_t address, uint64_t id);
