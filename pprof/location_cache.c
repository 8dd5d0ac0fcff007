/* location_cache.c — see location_cache.h.  Open addressing with linear
 * probing, at most half full.  It starts small (an idle process sees a
 * few dozen addresses) and doubles up to the capacity asked for; when full
 * at that size it is simply emptied, which keeps memory bounded for
 * processes that JIT or load code endlessly. */
#include "pprof/location_cache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct location_cache *cache, uint64_t address)
{
        uint64_t h = address * 0x9e3779b97f4a7c15ull;

        return (size_t)(h >> 32) & (cache->capacity - 1);
}

#define INITIAL_SLOTS 256

int location_cache__init(struct location_cache *cache, size_t capacity)
{
        size_t power = 64;

        while (power < capacity)
                power *= 2;
        memset(cache, 0, sizeof(*cache));
        cache->max_capacity = power;
        cache->capacity = power < INITIAL_SLOTS ? power : INITIAL_SLOTS;
        cache->addresses = calloc(cache->capacity, sizeof(*cache->addresses));
        cache->ids = calloc(cache->capacity, sizeof(*cache->ids));
        cache->stacks = calloc(LOCATION_STACK_SLOTS, sizeof(*cache->stacks));
        if (!cache->addresses || !cache->ids || !cache->stacks) {
                location_cache__release(cache);
                return -ENOMEM;
        }
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

static void insert(struct location_cache *cache, uint64_t address, uint64_t id)
{
        size_t i;

        for (i = slot_of(cache, address); cache->addresses[i] != 0;
             i = (i + 1) & (cache->capacity - 1))
                if (cache->addresses[i] == address)
                        return;
        cache->addresses[i] = address;
        cache->ids[i] = id;
        cache->used++;
}

/* Doubles the table, or returns false (out of memory: it stays as it is). */
static bool grow(struct location_cache *cache)
{
        struct location_cache old = *cache;
        size_t capacity = cache->capacity * 2;

        cache->addresses = calloc(capacity, sizeof(*cache->addresses));
        cache->ids = calloc(capacity, sizeof(*cache->ids));
        if (!cache->addresses || !cache->ids) {
                free(cache->addresses);
                free(cache->ids);
                cache->addresses = old.addresses;
                cache->ids = old.ids;
                return false;
        }
        cache->capacity = capacity;
        cache->used = 0;
        for (size_t i = 0; i < old.capacity; i++)
                if (old.addresses[i])
                        insert(cache, old.addresses[i], old.ids[i]);
        free(old.addresses);
        free(old.ids);
        return true;
}

void location_cache__put(struct location_cache *cache, uint64_t address, uint64_t id)
{
        if (!cache->capacity || address == 0 || id == 0)
                return;
        if (cache->used * 2 >= cache->capacity &&
            (cache->capacity >= cache->max_capacity || !grow(cache)))
                clear(cache);
        insert(cache, address, id);
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
