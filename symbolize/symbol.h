/* symbol.h — what a symbolized address is: the values symbolize/ hands
 * out (a mapped file, a source line, an address with its inline chain).
 * Plain data with no functions, so that the symbolizer's parts (line
 * cache, mapping pool, inline chains) and its callers share the types
 * without including symbolizer.h, whose objects are built from them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYMBOL_MAX_INLINE 8

/* One file-backed executable mapping of the target, as pprof's Mapping. */
struct mapped_file {
        uint64_t start;           /* first address of the mapping */
        uint64_t limit;           /* one past the last address */
        uint64_t offset;          /* file offset of start */
        const char *path;         /* as the target sees it, "" if none; as long as the mapping */
        const char *build_id_hex; /* lowercase hex GNU build-id, "" if none */
        bool has_debug_info;      /* line numbers were found for this file */
        /* Unique for the symbolizer's lifetime, never reused (unlike the
         * address of a freed object): a safe key for callers' caches. */
        uint64_t serial;
};

/* One source position; the innermost inlined function comes first. */
struct symbol_line {
        const char *function; /* demangled name, "" when unknown */
        const char *file;     /* source file, "" when unknown */
        int64_t line;         /* 0 when unknown */
};

struct symbolized_pc {
        uint64_t address;                  /* the address that was looked up */
        const struct mapped_file *mapping; /* NULL when in no file mapping */
        size_t n_lines;                    /* >= 1 */
        struct symbol_line lines[SYMBOL_MAX_INLINE];
};
