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
        cache->stacks = calloc(LOCATION_STACK_SLOTS, sizeof(*cache->stacks));
        if (!cache->addresses || !cache->ids || !cache->stacks) {
                location_cache__release(cache);
                return -ENOMEM;
        }
        cache->capacity = power;
        return 0;
}

void location_cache__release(struct location_cache *cache)
{
        for (size_t i = 0; cache->stacks && i < LOCATION_STACK_SLOTS; i++) {
                free(cache->stacks[i].keys);
                free(cache->stacks[i].ids);
        }
        free(cache->stacks);
        free(cache->addresses);
        free(cache->ids);
        memset(cache, 0, sizeof(*cache));
}

static void clear(struct location_cache *cache)
{
        memset(cache->addresses, 0, cache->capacity * sizeof(*cache->addresses));
        cache->used = 0;
        for (size_t i = 0; i < LOCATION_STACK_SLOTS; i++)
                cache->stacks[i].n = 0;
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

uint64_t location_cache__stack_hash(const uint64_t *keys, size_t n)
{
        uint64_t h = 0x84222325cbf29ce4ull ^ n;

        for (size_t i = 0; i < n * LOCATION_STACK_WORDS; i++)
                h = (h ^ keys[i]) * 0x9e3779b97f4a7c15ull;
        return h ^ (h >> 29);
}

const uint64_t *location_cache__get_stack(const struct location_cache *cache, uint64_t hash,
                                          const uint64_t *keys, size_t n)
{
        const struct location_stack *stack;

        if (!cache->capacity || n == 0)
                return NULL;
        stack = &cache->stacks[hash & (LOCATION_STACK_SLOTS - 1)];
        if (stack->n != n || stack->hash != hash ||
            memcmp(stack->keys, keys, n * LOCATION_STACK_WORDS * sizeof(*keys)) != 0)
                return NULL;
        return stack->ids;
}

void location_cache__put_stack(struct location_cache *cache, uint64_t hash, const uint64_t *keys,
                               const uint64_t *ids, size_t n)
{
        struct location_stack *stack;

        if (!cache->capacity || n == 0 || n > LOCATION_STACK_MAX)
                return;
        for (size_t i = 0; i < n; i++)
                if (ids[i] == 0)
                        return; /* a failed lookup is retried next time */
        stack = &cache->stacks[hash & (LOCATION_STACK_SLOTS - 1)];
        if (stack->capacity < n) {
                uint64_t *k = realloc(stack->keys, n * LOCATION_STACK_WORDS * sizeof(*k));
                if (k)
                        stack->keys = k;
                uint64_t *v = realloc(stack->ids, n * sizeof(*v));
                if (v)
                        stack->ids = v;
                stack->n = 0;
                if (!k || !v)
                        return;
                stack->capacity = n;
        }
        memcpy(stack->keys, keys, n * LOCATION_STACK_WORDS * sizeof(*keys));
        memcpy(stack->ids, ids, n * sizeof(*ids));
        stack->hash = hash;
        stack->n = n;
}
