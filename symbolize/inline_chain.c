/* inline_chain.c — what code an address belongs to, inlining included.
 *
 * With optimization most hot code is inlined, and a profile that only names
 * the out-of-line function hides where time goes.  We do what
 * `eu-addr2line -i` does: find the CU by address, get the DIE scopes that
 * contain it (dwarf_getscopes), then the physical nesting of the innermost
 * one (dwarf_getscopes_die, which does not mix in the abstract origin's
 * scopes).  Walking outwards, each DW_TAG_inlined_subroutine contributes one
 * frame: its own name (through DW_AT_abstract_origin) at the current
 * position, and its DW_AT_call_file/DW_AT_call_line become the position of
 * the next frame out.  The enclosing DW_TAG_subprogram ends the chain.
 *
 * The innermost position comes from the line table (dwfl_module_getsrc).
 * Names prefer the DWARF linkage name, demangled, because DW_AT_name of a
 * C++ method is just "run"; without DWARF, the ELF symbol table
 * (dwfl_module_addrinfo, which also reads .symtab of separate debug files)
 * gives the name.  All strings are interned, so results can be cached. */
#include "symbolize/inline_chain.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>

#include "symbolize/demangle.h"
#include "symbolize/source_path.h"
#include "util/cleanup.h"

/* Deeper chains are walked this far, then reduced to SYMBOL_MAX_INLINE. */
#define INLINE_CHAIN_MAX_DEPTH 64

const char *symbol_name__intern(struct string_pool *strings, const char *name)
{
        _cleanup_free_ char *demangled = cxx_name__demangle(name);
        const char *s = string_pool__intern(strings, demangled ? demangled : name);

        return s ? s : "";
}

static const char *die__function_name(Dwarf_Die *die, struct string_pool *strings)
{
        Dwarf_Attribute attr;
        const char *name;

        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
        if (!name)
                name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
        if (!name)
                name = dwarf_diename(die);
        return symbol_name__intern(strings, name);
}

static int64_t line__clamp(Dwarf_Word line)
{
        return line > INT64_MAX ? 0 : (int64_t)line;
}

/* Where the inlined subroutine `die` was called from. */
static void die__call_site(Dwarf_Die *die, struct string_pool *strings, struct symbol_line *pos)
{
        Dwarf_Attribute attr;
        Dwarf_Word idx, line;
        Dwarf_Files *files;
        Dwarf_Die cu;
        const char *file = NULL, *comp_dir = NULL;

        pos->file = "";
        pos->line = 0;
        if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) == 0)
                pos->line = line__clamp(line);
        if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &idx) != 0)
                return;
        if (dwarf_diecu(die, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, NULL) == 0) {
                file = dwarf_filesrc(files, idx, NULL, NULL); /* bounds-checked */
                comp_dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &attr));
        }
        pos->file = source_path__intern(strings, comp_dir, file);
}

/* The physical scopes around address, innermost first; 0 when none. */
static int scopes__get(Dwfl_Module *mod, uint64_t address, Dwarf_Die **scopes)
{
        _cleanup_free_ Dwarf_Die *logical = NULL;
        Dwarf_Addr bias = 0;
        Dwarf_Die *cudie = dwfl_module_addrdie(mod, address, &bias);
        int n;

        *scopes = NULL;
        if (!cudie)
                return 0;
        n = dwarf_getscopes(cudie, address - bias, &logical);
        if (n <= 0)
                return 0;
        n = dwarf_getscopes_die(&logical[0], scopes);
        if (n <= 0) {
                free(*scopes);
                *scopes = NULL;
                return 0;
        }
        return n;
}

static bool tag__is_function(int tag)
{
        return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram ||
               tag == DW_TAG_entry_point;
}

/* Fills chain[] from scopes, starting at position pos; returns its length. */
static size_t chain__build(Dwarf_Die *scopes, int n, struct symbol_line pos,
                           struct string_pool *strings, struct symbol_line *chain)
{
        size_t k = 0;

        for (int i = 0; i < n && k < INLINE_CHAIN_MAX_DEPTH; i++) {
                int tag = dwarf_tag(&scopes[i]);

                if (!tag__is_function(tag))
                        continue;
                pos.function = die__function_name(&scopes[i], strings);
                chain[k++] = pos;
                if (tag != DW_TAG_inlined_subroutine)
                        break;
                die__call_site(&scopes[i], strings, &pos);
        }
        return k;
}

/* Copies chain into out, keeping the innermost frames and the outermost
 * (out-of-line) one when the chain is longer than SYMBOL_MAX_INLINE. */
static void chain__store(const struct symbol_line *chain, size_t k, struct symbolized_pc *out)
{
        size_t keep = k > SYMBOL_MAX_INLINE ? SYMBOL_MAX_INLINE - 1 : k;

        for (size_t i = 0; i < keep; i++)
                out->lines[i] = chain[i];
        if (keep < k)
                out->lines[keep++] = chain[k - 1];
        out->n_lines = keep;
}

static struct symbol_line line_table__position(Dwfl_Module *mod, uint64_t address,
                                               struct string_pool *strings)
{
        struct symbol_line pos = {.function = "", .file = "", .line = 0};
        Dwfl_Line *line = dwfl_module_getsrc(mod, address);
        const char *file;
        int lineno = 0;

        if (!line)
                return pos;
        file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        pos.file = source_path__intern(strings, dwfl_line_comp_dir(line), file);
        pos.line = lineno > 0 ? lineno : 0;
        return pos;
}

static const char *symtab__name(Dwfl_Module *mod, uint64_t address, struct string_pool *strings)
{
        GElf_Off offset;
        GElf_Sym sym;
        const char *name = dwfl_module_addrinfo(mod, address, &offset, &sym, NULL, NULL, NULL);

        return symbol_name__intern(strings, name);
}

void inline_chain__resolve(Dwfl_Module *mod, uint64_t address, struct string_pool *strings,
                           struct symbolized_pc *out)
{
        struct symbol_line chain[INLINE_CHAIN_MAX_DEPTH];
        struct symbol_line pos = line_table__position(mod, address, strings);
        _cleanup_free_ Dwarf_Die *scopes = NULL;
        int n = scopes__get(mod, address, &scopes);
        size_t k = chain__build(scopes, n, pos, strings, chain);

        if (k == 0) {
                pos.function = symtab__name(mod, address, strings);
                chain[k++] = pos;
        } else if (chain[k - 1].function[0] == '\0') {
                chain[k - 1].function = symtab__name(mod, address, strings);
        }
        chain__store(chain, k, out);
}
