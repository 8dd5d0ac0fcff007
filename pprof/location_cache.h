/* location_cache.h — per-target map from a code address to the pprof
 * Location id already built for it.
 *
 * Steady-state sampling sees the same few thousand addresses again and
 * again; this turns each frame into one hash probe instead of a
 * symbolizer lookup plus the builder's deduplication.  The cache belongs
 * to one address space and one profile builder, and is emptied when the
 * address space's mappings change or when it is full.
 *
 * It also remembers whole stacks: the Location ids built for a sample's
 * frames, keyed by the frames themselves (LOCATION_STACK_WORDS words per
 * frame, chosen by the caller).  A thread that is sampled again in the
 * same code, or an idle thread whose stack is reused, then costs one hash
 * and one comparison of its frames instead of one lookup per frame.  The
 * stacks are forgotten with the addresses. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define LOCATION_STACK_WORDS 3    /* key words per frame */
#define LOCATION_STACK_SLOTS 64   /* stacks remembered (direct-mapped) */
#define LOCATION_STACK_MAX   1024 /* deeper stacks are not remembered */

struct location_stack {
        uint64_t hash;
        size_t n;       /* frames; 0 = empty */
        uint64_t *keys; /* n * LOCATION_STACK_WORDS */
        uint64_t *ids;  /* n */
        size_t capacity;
};

struct location_cache {
        uint64_t *addresses; /* 0 = empty slot */
        uint64_t *ids;
        size_t capacity;     /* power of two */
        size_t max_capacity; /* it grows up to this, then is emptied when full */
        size_t used;
        uint64_t generation;           /* address space generation the entries are for */
        struct location_stack *stacks; /* LOCATION_STACK_SLOTS */
};

/* A cache that grows to `capacity` addresses (rounded up to a power of
 * two) as it fills.  0 or -ENOMEM. */
int location_cache__init(struct location_cache *cache, size_t capacity);
void location_cache__release(struct location_cache *cache);

/* Empties the cache if `generation` differs from the cached one. */
void location_cache__validate(struct location_cache *cache, uint64_t generation);

/* The Location id for `address`, or 0. */
uint64_t location_cache__get(const struct location_cache *cache, uint64_t address);
void location_cache__put(struct location_cache *cache, uint64_t address, uint64_t id);

/* The hash of a stack key of n frames (n * LOCATION_STACK_WORDS words). */
uint64_t location_cache__stack_hash(const uint64_t *keys, size_t n);

/* The n Location ids remembered for this stack key, or NULL. */
const uint64_t *location_cache__get_stack(const struct location_cache *cache, uint64_t hash,
                                          const uint64_t *keys, size_t n);

/* Remembers the ids of a stack (when it has no 0 id and is not too deep). */
void location_cache__put_stack(struct location_cache *cache, uint64_t hash, const uint64_t *keys,
                               const uint64_t *ids, size_t n);
