/* symbolizer.c — the symbolizer object and address lookups.
 *
 * The symbolizer owns everything that is shared between processes: the
 * string pool, the ELF file identities, the interned mappings and the
 * (file, relative address) -> lines cache.  A lookup finds the address's
 * module in the address space, turns the address into one relative to the
 * module's load bias (the same in every process mapping that file), and
 * asks the cache; only on a miss does it walk DWARF (inline_chain), in the
 * file's symbolization Dwfl shared by all processes (shared_elf.c), or in
 * the process's own when that cannot be made.  Not thread-safe: one thread
 * symbolizes. */
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/inline_chain.h"
#include "symbolize/shared_elf.h"
#include "symbolize/symbolizer_internal.h"

/* A per-symbolizer hash seed, so that hostile names cannot be chosen to
 * collide in advance. */
static uint64_t symbolizer__seed(void)
{
        uint64_t seed;
        struct timespec ts;

        if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed))
                return seed;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)getpid();
}

struct symbolizer *symbolizer__new(void)
{
        struct symbolizer *s = calloc(1, sizeof(*s));
        uint64_t seed = symbolizer__seed();

        if (!s)
                return NULL;
        elf_version(EV_CURRENT);
        string_pool__init(&s->strings, seed);
        elf_files__init(&s->files, &s->strings);
        line_cache__init(&s->lines, seed, LINE_CACHE_MAX_ENTRIES);
        mapping_pool__init(&s->mappings, seed);
        return s;
}

void symbolizer__free(struct symbolizer *s)
{
        if (!s)
                return;
        line_cache__clear(&s->lines);
        mapping_pool__clear(&s->mappings);
        elf_files__clear(&s->files, shared_elf__clear);
        string_pool__clear(&s->strings);
        free(s);
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *out)
{
        *out = (struct symbolizer_stats){
            .lines = line_cache__size(&s->lines),
            .lines_max = 2 * s->lines.max_entries,
            .lines_evicted = s->lines.evicted,
            .strings = s->strings.tab.n_nodes,
            .mappings = s->mappings.tab.n_nodes,
            .files = s->files.tab.n_nodes,
        };
}

static bool symbolized_pc__has_lines(const struct symbolized_pc *pc)
{
        for (size_t i = 0; i < pc->n_lines; i++)
                if (pc->lines[i].line > 0)
                        return true;
        return false;
}

/* Whether the lookup found anything: a function, a file or a line. */
static bool symbolized_pc__known(const struct symbolized_pc *pc)
{
        for (size_t i = 0; i < pc->n_lines; i++)
                if (pc->lines[i].function[0] || pc->lines[i].file[0] || pc->lines[i].line > 0)
                        return true;
        return false;
}

void address_space__symbolize(struct address_space *space, uint64_t address,
                              struct symbolized_pc *out)
{
        struct symbolizer *s = space->symbolizer;
        struct mapped_file *mapping = address_space__mapping_mut(space, address);
        struct module *m = address_space__module_at(space, address);
        uint64_t rel;

        memset(out, 0, sizeof(*out));
        out->address = address;
        out->mapping = mapping;
        out->n_lines = 1;
        out->lines[0] = (struct symbol_line){.function = "", .file = "", .line = 0};
        if (!m || !m->dwfl_module || !m->file)
                return;
        rel = address - m->bias;
        if (!line_cache__lookup(&s->lines, m->file, rel, out)) {
                Dwfl_Module *shared = shared_elf__dwarf(m->file, space->pid, m->name);

                if (shared)
                        inline_chain__resolve(shared, rel, &s->strings, out);
                else
                        inline_chain__resolve(m->dwfl_module, address, &s->strings, out);
                /* An address nothing is known of (a stripped binary's
                 * own code: the shell's loop, under churn one new address
                 * per process started) is cheap to miss again, and each
                 * entry would stay until the cache is full. */
                if (symbolized_pc__known(out))
                        line_cache__store(&s->lines, m->file, rel, out);
                if (symbolized_pc__has_lines(out))
                        m->file->has_debug_info = true;
        }
        if (mapping && m->file->has_debug_info)
                mapping->has_debug_info = true;
}

bool address_space__function_range(struct address_space *space, uint64_t address, uint64_t *start,
                                   uint64_t *end, const char **name)
{
        const struct mapped_file *mapping = address_space__mapping_at(space, address);
        struct module *m = address_space__module_at(space, address);
        uint64_t rel_start, rel_end;
        const char *found;

        if (!mapping || !m || !m->dwfl_module || !m->file)
                return false;
        /* Only the shared table (at load bias 0), never the process's own
         * module: asking that would load a symbol table per process, the
         * cost this function exists to avoid.  Without the shared one the
         * caller falls back to address_space__symbolize(). */
        if (address < m->bias ||
            !shared_elf__function_at(m->file, space->pid, m->name, address - m->bias, &rel_start,
                                     &rel_end, &found))
                return false;
        *start = rel_start + m->bias;
        *end = rel_end + m->bias;
        if (*end < *start || *start < mapping->start || *end > mapping->limit)
                return false;
        if (name)
                *name = found;
        return true;
}
