/* line_cache.h — (file, file-relative address) -> resolved lines. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf_file.h"
#include "util/hashtab.h"
#include "symbolize/symbol.h"

#define LINE_CACHE_MAX_ENTRIES (1u << 18)

struct line_cache {
        struct hashtab tab;
        uint64_t seed;
        size_t max_entries;
};

void line_cache__init(struct line_cache *cache, uint64_t seed, size_t max_entries);
void line_cache__clear(struct line_cache *cache);
/* Fills out->n_lines and out->lines on a hit. */
bool line_cache__lookup(const struct line_cache *cache, const struct elf_file *file, uint64_t rel,
                        struct symbolized_pc *out);
/* Remembers pc's lines; failures only cost a later recomputation. */
void line_cache__store(struct line_cache *cache, const struct elf_file *file, uint64_t rel,
                       const struct symbolized_pc *pc);
