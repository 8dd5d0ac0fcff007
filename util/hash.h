/* hash.h — the one 64-bit hash of the hash tables (util/hashtab.h,
 * util/index_map.h): bytes and integers, mixed with a seed.
 *
 * The symbolizer caches seed per owner (symbolizer.c reads getrandom), so
 * that names a hostile process chooses cannot be made to collide; the
 * pprof/ tables pass 0, since colliding names there can only slow one
 * profile down.  Not cryptographic either way.  The result is finished
 * (hash__finish), so its low bits can pick a slot directly. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t hash__combine(uint64_t hash, uint64_t value)
{
        hash ^= value;
        hash *= 0xbf58476d1ce4e5b9ull;
        hash ^= hash >> 31;
        return hash;
}

/* murmur3's fmix64: spreads every input bit over the low bits that pick
 * a slot in a power-of-two table. */
static inline uint64_t hash__finish(uint64_t hash)
{
        hash ^= hash >> 33;
        hash *= 0xff51afd7ed558ccdull;
        hash ^= hash >> 33;
        hash *= 0xc4ceb9fe1a85ec53ull;
        hash ^= hash >> 33;
        return hash;
}

/* Eight bytes per step, since function and file names run long. */
static inline uint64_t hash__bytes(uint64_t seed, const void *data, size_t len)
{
        const uint8_t *p = data;
        uint64_t hash = hash__combine(seed ^ 0x9e3779b97f4a7c15ull, len);
        uint64_t word;

        for (; len >= 8; p += 8, len -= 8) {
                memcpy(&word, p, 8);
                hash = hash__combine(hash, word);
        }
        word = 0;
        if (len)
                memcpy(&word, p, len);
        return hash__finish(hash__combine(hash, word));
}

static inline uint64_t hash__u64(uint64_t seed, uint64_t value)
{
        return hash__finish(seed ^ hash__finish(value));
}
