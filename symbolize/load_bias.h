/* load_bias.h — where an ELF file was loaded, from its mappings. */
#pragma once

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/proc_maps.h"
#include "util/cleanup.h"

/* _cleanup_(elf_endp) Elf *elf: the one Elf handle cleanup (util/cleanup.h
 * cannot include libelf). */
DEFINE_TRIVIAL_CLEANUP_FUNC(Elf *, elf_end, elf_endp)

/* Computes the load bias (runtime address - ELF virtual address) of `elf`
 * from the consecutive mappings maps[0..n) of that file, and checks that
 * every executable mapping lies where an executable PT_LOAD says it should.
 * Returns false when the file does not match its mappings. */
bool load_bias__compute(Elf *elf, const struct proc_map *maps, size_t n, uint64_t page_size,
                        uint64_t *bias);
