/* test_location_cache.c — unit tests for pprof/location_cache.c: the
 * address table starts small, keeps every entry while it doubles, stops at
 * the capacity asked for and is emptied (not grown) when full there; a
 * change of address-space generation empties it. */
#include <stdio.h>

#include "pprof/location_cache.h"
#include "tests/unit/check.h"

#define MAX_SLOTS 4096

static uint64_t address_of(size_t i)
{
        return 0x400000 + i * 16;
}

static void test_grows_and_keeps(void)
{
        struct location_cache cache;
        size_t initial;

        CHECK(location_cache__init(&cache, MAX_SLOTS) == 0);
        initial = cache.capacity;
        CHECK(initial < MAX_SLOTS && cache.max_capacity == MAX_SLOTS);
        for (size_t i = 0; i < MAX_SLOTS / 2; i++)
                location_cache__put(&cache, address_of(i), i + 1);
        CHECK(cache.capacity == MAX_SLOTS);
        for (size_t i = 0; i < MAX_SLOTS / 2; i++)
                CHECK(location_cache__get(&cache, address_of(i)) == i + 1);
        CHECK(location_cache__get(&cache, address_of(MAX_SLOTS)) == 0);
        /* Full at its largest: emptied, then the new entry is in. */
        location_cache__put(&cache, address_of(MAX_SLOTS), 7);
        CHECK(cache.capacity == MAX_SLOTS && cache.used == 1);
        CHECK(location_cache__get(&cache, address_of(0)) == 0);
        CHECK(location_cache__get(&cache, address_of(MAX_SLOTS)) == 7);
        location_cache__release(&cache);
}

static void test_generation_empties(void)
{
        struct location_cache cache;

        CHECK(location_cache__init(&cache, MAX_SLOTS) == 0);
        location_cache__validate(&cache, 1);
        location_cache__put(&cache, address_of(1), 5);
        location_cache__validate(&cache, 1);
        CHECK(location_cache__get(&cache, address_of(1)) == 5);
        location_cache__validate(&cache, 2);
        CHECK(location_cache__get(&cache, address_of(1)) == 0);
        location_cache__release(&cache);
}

int main(void)
{
        test_grows_and_keeps();
        test_generation_empties();
        fprintf(stderr, "location_cache: ok\n");
        return 0;
}
