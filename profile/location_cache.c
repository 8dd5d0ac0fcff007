/* location_cache.c — see location_cache.h.  Open addressing with linear
 * probing, at most half full; when full it is simply emptied, which keeps
 * memory bounded for processes that JIT or load code endlessly. */
#include "profile/location_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct location_cache *cache, uint64_t address)
{
        uint64_t h = address * 0x9e3779b97f4a7c15ull;

        return (size_t)(h >> 32) & (cache->capacity - 1);
}

int location_cache__init(struct location_cache *cache, size_t capacity)
{
        size_t power = 64;

        while (power < capacity)
                power *= 2;
        memset(cache, 0, sizeof(*cache));
        cache->addresses = calloc(power, sizeof(*cache->addresses));
        cache->ids = calloc(power, sizeof(*cache->ids));
        if (!cache->addresses || !cache->ids) {
                location_cache__release(cache);
                return -ENOMEM;
        }
        cache->capacity = power;
        return 0;
}

void location_cache__release(struct location_cache *cache)
{
        free(cache->addresses);
        free(cache->ids);
        memset(cache, 0, sizeof(*cache));
}

static void clear(struct location_cache *cache)
{
        memset(cache->addresses, 0, cache->capacity * sizeof(*cache->addresses));
        cache->used = 0;
}

void location_cache__validate(struct location_cache *cache, uint64_t generation)
{
        if (cache->generation == generation)
                return;
        if (cache->capacity)
                clear(cache);
        cache->generation = generation;
}

uint64_t location_cache__get(const struct location_cache *cache, uint64_t address)
{
        if (!cache->capacity || address == 0)
                return 0;
        for (size_t i = slot_of(cache, address);; i = (i + 1) & (cache->capacity - 1)) {
                if (cache->addresses[i] == address)
                        return cache->ids[i];
                if (cache->addresses[i] == 0)
                        return 0;
        }
}

void location_cache__put(struct location_cache *cache, uint64_t address, uint64_t id)
{
        size_t i;

        if (!cache->capacity || address == 0 || id == 0)
                return;
        if (cache->used * 2 >= cache->capacity)
                clear(cache);
        for (i = slot_of(cache, address); cache->addresses[i] != 0;
             i = (i + 1) & (cache->capacity - 1))
                if (cache->addresses[i] == address)
                        return;
        cache->addresses[i] = address;
        cache->ids[i] = id;
        cache->used++;
}
