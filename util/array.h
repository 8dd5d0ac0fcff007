/* array.h — growth of the plain (items, count, capacity) arrays used
 * throughout: the pprof/ tables, the symbolizer's layouts, dump and top. */
#pragma once

#include <stddef.h>

/* Makes room for at least `needed` elements of `elem_size` bytes, growing
 * geometrically; never leaves *items NULL.  0 or -ENOMEM; on failure
 * *items is left untouched. */
int array__reserve(void **items, size_t *capacity, size_t needed, size_t elem_size);

/* Type-safe front end: ARRAY_RESERVE(table->items, table->capacity, n). */
#define ARRAY_RESERVE(items, capacity, needed)                                                     \
        ({                                                                                         \
                void *_items = (items);                                                            \
                int _r = array__reserve(&_items, &(capacity), (needed), sizeof(*(items)));         \
                (items) = _items;                                                                  \
                _r;                                                                                \
        })
