/* string_table.c — interning for the pprof string table.
 *
 * pprof refers to every string by its index in Profile.string_table, and
 * a profile repeats the same few thousand function and file names across
 * hundreds of thousands of frames.  Interning stores each distinct string
 * once, so the encoded profile stays small and equal strings get equal
 * indices, which is what lets functions and locations deduplicate by
 * comparing integers.  The table copies its input, because callers pass
 * strings that live in symbolizer caches with shorter lifetimes.
 *
 * strings[] is kept NUL-terminated and contiguous so that the encoder can
 * hand it to protobuf-c as is; lengths[] lets equality checks skip
 * strcmp on strings of different lengths. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/hash.h"
#include "pprof/string_table.h"
#include "util/cleanup.h"

struct string_key {
        const struct string_table *table;
        const char *string;
        size_t len;
};

static bool string_table__equal(const void *context, uint32_t index)
{
        const struct string_key *key = context;

        return key->table->lengths[index] == key->len &&
               memcmp(key->table->strings[index], key->string, key->len) == 0;
}

static int64_t string_table__append(struct string_table *table, const struct string_key *key,
                                    uint64_t hash)
{
        _cleanup_free_ char *copy = NULL;
        int r;

        if (ARRAY_RESERVE(table->strings, table->capacity, table->count + 1) < 0 ||
            ARRAY_RESERVE(table->lengths, table->lengths_capacity, table->count + 1) < 0)
                return -ENOMEM;
        copy = strndup(key->string, key->len);
        if (!copy)
                return -ENOMEM;
        r = index_map__insert(&table->map, hash, (uint32_t)table->count);
        if (r < 0)
                return r;
        table->strings[table->count] = take_ptr(copy);
        table->lengths[table->count] = key->len;
        return (int64_t)table->count++;
}

int64_t string_table__intern(struct string_table *table, const char *string)
{
        struct string_key key = {table, string ? string : "", 0};
        uint64_t hash;
        uint32_t index;

        key.len = strlen(key.string);
        hash = hash__bytes(0, key.string, key.len);
        index = index_map__find(&table->map, hash, string_table__equal, &key);
        if (index != INDEX_MAP_NONE)
                return index;
        return string_table__append(table, &key, hash);
}

int string_table__init(struct string_table *table)
{
        int64_t empty;

        *table = (struct string_table){0};
        empty = string_table__intern(table, "");
        if (empty < 0) {
                string_table__free(table);
                return (int)empty;
        }
        return 0;
}

void string_table__free(struct string_table *table)
{
        size_t i;

        for (i = 0; i < table->count; i++)
                free(table->strings[i]);
        free(table->strings);
        free(table->lengths);
        index_map__free(&table->map);
        *table = (struct string_table){0};
}
