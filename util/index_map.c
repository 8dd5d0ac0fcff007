/* index_map.c — the one hash table behind every deduplicating table in
 * pprof/ (strings, mappings, functions, locations).
 *
 * Each of those tables already keeps its entries in a dense array, since
 * that array is what gets encoded, and a pprof id is just its position
 * plus one.  So the map does not own keys: a slot holds the full 64-bit
 * hash and the array index, and the caller's callback compares keys only
 * when the full hashes match.  Linear probing over a power-of-two table
 * kept at most half full gives short probe runs; growing rehashes from
 * the stored hashes, so no callback is needed then. */
#include <errno.h>
#include <stdlib.h>

#include "util/hash.h"
#include "util/index_map.h"

#define INITIAL_CAPACITY 64

static size_t index_map__slot_of(size_t mask, uint64_t hash)
{
        return (size_t)hash__finish(hash) & mask;
}

uint32_t index_map__find(const struct index_map *map, uint64_t hash, index_map_equal_fn equal,
                         const void *context)
{
        size_t i;

        if (!map->slots)
                return INDEX_MAP_NONE;
        for (i = index_map__slot_of(map->mask, hash);; i = (i + 1) & map->mask) {
                const struct index_map_slot *slot = &map->slots[i];

                if (slot->index_plus_one == 0)
                        return INDEX_MAP_NONE;
                if (slot->hash == hash && equal(context, slot->index_plus_one - 1))
                        return slot->index_plus_one - 1;
        }
}

static void index_map__place(struct index_map_slot *slots, size_t mask, uint64_t hash,
                             uint32_t index_plus_one)
{
        size_t i = index_map__slot_of(mask, hash);

        while (slots[i].index_plus_one != 0)
                i = (i + 1) & mask;
        slots[i].hash = hash;
        slots[i].index_plus_one = index_plus_one;
}

static int index_map__grow(struct index_map *map)
{
        size_t capacity = map->slots ? (map->mask + 1) * 2 : INITIAL_CAPACITY;
        struct index_map_slot *slots;
        size_t i;

        if (capacity > SIZE_MAX / sizeof(*slots) / 2)
                return -ENOMEM;
        slots = calloc(capacity, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (i = 0; map->slots && i <= map->mask; i++)
                if (map->slots[i].index_plus_one != 0)
                        index_map__place(slots, capacity - 1, map->slots[i].hash,
                                         map->slots[i].index_plus_one);
        free(map->slots);
        map->slots = slots;
        map->mask = capacity - 1;
        return 0;
}

int index_map__insert(struct index_map *map, uint64_t hash, uint32_t index)
{
        int r;

        if (index >= INDEX_MAP_NONE - 1)
                return -ENOMEM;
        if (!map->slots || (map->count + 1) * 2 > map->mask + 1) {
                r = index_map__grow(map);
                if (r < 0)
                        return r;
        }
        index_map__place(map->slots, map->mask, hash, index + 1);
        map->count++;
        return 0;
}

void index_map__free(struct index_map *map)
{
        free(map->slots);
        *map = (struct index_map){0};
}
