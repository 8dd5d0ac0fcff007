/* test_line_cache.c — unit tests for symbolize/line_cache.c: entries are
 * shared by key (file record, relative address); the cache never holds
 * more than two generations; an entry hit once per generation survives
 * any number of others, one never hit again is evicted and counted. */
#include <string.h>

#include "symbolize/line_cache.h"
#include "tests/unit/check.h"

#define MAX_ENTRIES 64

static struct symbolized_pc pc_of(const char *function, int64_t line)
{
        struct symbolized_pc pc = {.n_lines = 1};

        pc.lines[0] = (struct symbol_line){.function = function, .file = "f.c", .line = line};
        return pc;
}

static bool has(struct line_cache *cache, const struct elf_file *file, uint64_t rel, int64_t line)
{
        struct symbolized_pc out = {0};

        return line_cache__lookup(cache, file, rel, &out) && out.n_lines == 1 &&
               out.lines[0].line == line;
}

static void test_keyed_by_file_and_rel(void)
{
        struct elf_file a = {0}, b = {0};
        struct line_cache cache;
        struct symbolized_pc pc = pc_of("f", 7);

        line_cache__init(&cache, 1, MAX_ENTRIES);
        line_cache__store(&cache, &a, 0x10, &pc);
        CHECK(has(&cache, &a, 0x10, 7));
        CHECK(!has(&cache, &b, 0x10, 7));
        CHECK(!has(&cache, &a, 0x11, 7));
        CHECK(line_cache__size(&cache) == 1);
        line_cache__clear(&cache);
        CHECK(line_cache__size(&cache) == 0);
}

static void test_bounded_hot_entry_kept(void)
{
        struct elf_file file = {0};
        struct line_cache cache;
        struct symbolized_pc hot = pc_of("hot", 1), cold = pc_of("cold", 2);

        line_cache__init(&cache, 2, MAX_ENTRIES);
        line_cache__store(&cache, &file, 0, &hot);
        for (uint64_t i = 1; i <= 100 * MAX_ENTRIES; i++) {
                line_cache__store(&cache, &file, i, &cold);
                CHECK(line_cache__size(&cache) <= 2 * MAX_ENTRIES);
                if (i % (MAX_ENTRIES / 2) == 0)
                        CHECK(has(&cache, &file, 0, 1));
        }
        CHECK(has(&cache, &file, 0, 1));
        /* The first cold entries are long gone, and were counted. */
        CHECK(!has(&cache, &file, 1, 2));
        CHECK(has(&cache, &file, 100 * MAX_ENTRIES, 2));
        CHECK(cache.evicted + line_cache__size(&cache) == 100 * MAX_ENTRIES + 1);
        line_cache__clear(&cache);
}

int main(void)
{
        test_keyed_by_file_and_rel();
        test_bounded_hot_entry_kept();
        return 0;
}
