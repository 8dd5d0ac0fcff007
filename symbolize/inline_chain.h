/* inline_chain.h — function, file, line and inline chain of an address. */
#pragma once

#include <elfutils/libdwfl.h>
#include <stdint.h>

#include "util/string_pool.h"
#include "symbolize/symbol.h"

/* Resolves `address` (absolute, in mod's Dwfl) into out->lines/n_lines,
 * innermost inlined function first, the out-of-line function last.  Falls
 * back to the ELF symbol table when there is no DWARF.  Never fails. */
void inline_chain__resolve(Dwfl_Module *mod, uint64_t address, struct string_pool *strings,
                           struct symbolized_pc *out);
/* Interns a symbol name, demangled when it is a C++ name. */
const char *symbol_name__intern(struct string_pool *strings, const char *name);
