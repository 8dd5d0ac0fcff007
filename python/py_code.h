/* py_code.h — decoded code objects, cached by address. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_offsets.h"
#include "util/hashtab.h"
#include "util/string_pool.h"

#define PY_CODE_CACHE_MAX   16384       /* entries; the cache is emptied when full */
#define PY_LINETABLE_MAX    (64u << 10) /* larger tables: line -1 */
#define PY_CODE_REVALIDATE  (1000ull * 1000 * 1000)
#define PY_STRINGS_MAX      (256u * 1024) /* distinct names kept per process */
#define PY_UNKNOWN_FUNCTION "<unknown>"

struct py_code {
        struct hash_node node;
        uint64_t address;
        /* Fields re-checked on revalidation. */
        uint64_t name_ptr, filename_ptr, table_ptr;
        int32_t first_line;
        int32_t first_traceable; /* code units; 3.11–3.13 */
        const char *name;        /* interned; co_qualname (3.11+) or co_name */
        const char *filename;    /* interned */
        uint8_t *table;          /* line table copy (NULL when empty) */
        size_t table_len;
        bool table_valid;    /* false when unreadable or too large: line -1 */
        uint64_t checked_ns; /* CLOCK_MONOTONIC of the last validation */
        /* The last two positions decoded and their lines (the
         * table never changes for a cached code object): recursion and
         * loops put many frames of one code object at the same position.
         * memo_positions start at -2, which no position is. */
        int64_t memo_positions[2], memo_lines[2];
        unsigned int memo_next;
};

struct py_code_cache {
        pid_t pid;
        const struct py_offsets *offsets;
        uint64_t code_type; /* &PyCode_Type, 0 = do not check */
        struct hashtab tab;
        struct string_pool *strings;
        uint64_t seed;
        uint64_t reads; /* remote reads done, for statistics */
};

void py_code_cache__init(struct py_code_cache *cache, pid_t pid, const struct py_offsets *offsets,
                         uint64_t code_type, struct string_pool *strings);
void py_code_cache__clear(struct py_code_cache *cache);

/* The decoded code object at `address`, read on first use and re-checked
 * (one small read) at most every PY_CODE_REVALIDATE ns.  NULL when the
 * address does not hold a readable code object. */
struct py_code *py_code__get(struct py_code_cache *cache, uint64_t address, uint64_t now_ns);

/* Line of an instruction position, as `format` counts it (3.9 f_lasti
 * in bytes, 3.10 f_lasti in code units, 3.11+ code-unit index).  -1 when
 * unknown. */
int64_t py_code__line(struct py_code *code, enum py_line_format format, int64_t position);
