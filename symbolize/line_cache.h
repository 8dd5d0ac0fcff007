/* line_cache.h — (file, file-relative address) -> resolved lines. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/elf_file.h"
#include "util/hashtab.h"
#include "symbolize/symbol.h"

/* Entries per generation: the cache holds at most twice this many (an entry
 * is 64-240 bytes with its bucket, so at most 4-16 MiB).  A profiled host's
 * hot set is a few thousand addresses; the daemon's churn soak holds a few
 * hundred. */
#define LINE_CACHE_MAX_ENTRIES (1u << 15)

/* Two generations: entries are added to `young`; a hit in `old` moves the
 * entry to `young`; when `young` is full, `old` is freed and `young`
 * becomes `old`.  So an entry used once per generation survives, one not
 * used for a whole generation is evicted, and no hit pays any bookkeeping
 * beyond the move.  Keys are process-independent (the elf_file record of a
 * build-id, which lives as long as the symbolizer, and the address
 * relative to the load bias), so identical binaries share entries. */
struct line_cache {
        struct hashtab young, old;
        uint64_t seed;
        size_t max_entries; /* per generation */
        uint64_t evicted;   /* entries freed with an old generation */
};

void line_cache__init(struct line_cache *cache, uint64_t seed, size_t max_entries);
void line_cache__clear(struct line_cache *cache);
/* Entries held, both generations. */
size_t line_cache__size(const struct line_cache *cache);
/* Fills out->n_lines and out->lines on a hit (and keeps the entry young). */
bool line_cache__lookup(struct line_cache *cache, const struct elf_file *file, uint64_t rel,
                        struct symbolized_pc *out);
/* Remembers pc's lines; failures only cost a later recomputation. */
void line_cache__store(struct line_cache *cache, const struct elf_file *file, uint64_t rel,
                       const struct symbolized_pc *pc);
