/* index_map.h — open-addressing hash set of indices into a caller's
 * array.  The map stores only (hash, index); the caller's table holds the
 * keys and answers "is entry i equal to my key?" through a callback. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INDEX_MAP_NONE UINT32_MAX

struct index_map_slot {
        uint64_t hash;
        uint32_t index_plus_one; /* 0: empty slot */
};

/* Zero-initialized is empty and valid. */
struct index_map {
        struct index_map_slot *slots;
        size_t mask; /* capacity - 1; capacity is a power of two */
        size_t count;
};

/* True when entry `index` of the caller's table equals the key that
 * `context` describes. */
typedef bool (*index_map_equal_fn)(const void *context, uint32_t index);

/* The index of the entry with this hash that `equal` accepts, or
 * INDEX_MAP_NONE. */
uint32_t index_map__find(const struct index_map *map, uint64_t hash, index_map_equal_fn equal,
                         const void *context);

/* Adds an index the caller has checked is absent.  0 or -ENOMEM. */
int index_map__insert(struct index_map *map, uint64_t hash, uint32_t index);

void index_map__free(struct index_map *map);
