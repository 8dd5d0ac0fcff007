/* string_table.h — interned strings for a pprof Profile.string_table.
 * Index 0 is always "", and NULL interns as "". */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util/index_map.h"

struct string_table {
        char **strings; /* laid out as Profile.string_table wants it */
        size_t *lengths;
        size_t count, capacity, lengths_capacity;
        struct index_map map;
};

/* 0 or -ENOMEM. */
int string_table__init(struct string_table *table);
void string_table__free(struct string_table *table);

/* The index of a copy of `string`, added on first sight; -ENOMEM. */
int64_t string_table__intern(struct string_table *table, const char *string);
