/* array.c — geometric growth for plain arrays (see array.h).
 *
 * A profile accumulates up to millions of location ids, values and labels
 * in flat arrays.  Doubling the capacity keeps appends amortized O(1);
 * every multiplication is checked, because the element counts come from
 * the profiled workload and a wrapped size would be a heap overflow. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/array.h"

int array__reserve(void **items, size_t *capacity, size_t needed, size_t elem_size)
{
        size_t new_capacity = *capacity ? *capacity : 16;
        void *grown;

        /* Allocates even for needed == 0, so that callers may always form
         * &items[count] (memcpy and friends reject NULL even for 0 bytes). */
        if (needed <= *capacity && *items)
                return 0;
        while (new_capacity < needed) {
                if (new_capacity > SIZE_MAX / 2)
                        return -ENOMEM;
                new_capacity *= 2;
        }
        if (elem_size && new_capacity > SIZE_MAX / elem_size)
                return -ENOMEM;
        grown = realloc(*items, new_capacity * elem_size);
        if (!grown)
                return -ENOMEM;
        *items = grown;
        *capacity = new_capacity;
        return 0;
}
