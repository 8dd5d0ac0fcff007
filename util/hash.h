/* hash.h — small, fast, deterministic 64-bit hashing for the pprof/ and render/ hash
 * maps.  Not keyed: the profiler only hashes its own interned data, and a
 * process that crafts colliding symbol names can only slow us down. */
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
static inline uint64_t hash__bytes(const void *data, size_t len)
{
        const uint8_t *p = data;
        uint64_t hash = hash__combine(0x9e3779b97f4a7c15ull, len);
        uint64_t word;

        for (; len >= 8; p += 8, len -= 8) {
                memcpy(&word, p, 8);
                hash = hash__combine(hash, word);
        }
        word = 0;
        memcpy(&word, p, len);
        return hash__combine(hash, word);
}
