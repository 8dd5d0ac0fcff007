/* address_space.c — one target process as libdwfl and the exporter see it.
 *
 * The unwinder needs a Dwfl with one module per mapped ELF file (for CFI),
 * the symbolizer needs the module and load bias of an address, and the
 * exporter needs the pprof mapping of an address.  All three derive from
 * /proc/PID/maps, which changes only on dlopen/dlclose/exec, while samples
 * arrive constantly.  So refresh re-reads the maps text (cheap) and only
 * when it differs from the last one reports modules again, inside
 * dwfl_report_begin/dwfl_report_end on the same Dwfl: the unwinder has
 * attached thread state to that Dwfl, so it is never replaced, and modules
 * of files that did not move are kept with everything libdwfl loaded.
 *
 * Consecutive mappings of one file (same device, inode and path) form one
 * module, and so does the vDSO; files without an executable mapping are
 * skipped.  Our own module
 * and mapping arrays are sorted, so address lookups are binary searches,
 * and mapped_file objects are interned in the symbolizer so pointers handed
 * out survive refreshes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/module_report.h"
#include "symbolize/proc_maps.h"
#include "symbolize/shared_elf.h"
#include "symbolize/symbolizer_internal.h"
#include "symbolize/vdso.h"
#include "util/array.h"
#include "util/cleanup.h"
#include "util/log.h"

/* What one report produces; replaces the space's arrays when done. */
struct layout {
        struct module *modules;
        size_t n_modules, cap_modules;
        struct mapped_file **mappings;
        size_t n_mappings, cap_mappings;
};

/* libdwfl asks for a module's image when it first needs it; module__adopt
 * makes that happen at once, while space->reporting says which module it
 * is, and the answer is a reference to the image shared by every process
 * mapping the same file (shared_elf.c).  Never a host path or a new fd. */
static int address_space__find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
                                   Dwarf_Addr base, char **file_name, Elf **elfp)
{
        struct address_space *space = *userdata;
        const struct module *m = space ? space->reporting : NULL;

        *elfp = NULL;
        if (!m || !m->file)
                return -1;
        *elfp = shared_elf__dup(m->file);
        if (!*elfp || *file_name)
                return -1;
        /* The path under the target's root, for .gnu_debuglink lookups of
         * dwfl_standard_find_debuginfo; libdwfl frees it. */
        if (m->name[0] == '/' ? asprintf(file_name, "/proc/%d/root%s", (int)space->pid, m->name) < 0
                              : !(*file_name = strdup(m->name)))
                *file_name = NULL;
        return -1;
}

static const struct module *layout__old_module(const struct address_space *space,
                                               const struct module *probe)
{
        size_t lo = 0, hi = space->n_modules;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (space->modules[mid].start < probe->start)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo < space->n_modules && module__same(&space->modules[lo], probe))
                return &space->modules[lo];
        return NULL;
}

static int layout__add_mapping(struct address_space *space, struct layout *l,
                               const struct proc_map *map, const struct module *m)
{
        struct mapped_file tmpl = {
            .start = map->start,
            .limit = map->limit,
            .offset = map->offset,
            .path = m->name,
            .build_id_hex = m->file ? m->file->build_id_hex : "",
            .has_debug_info = m->file && m->file->has_debug_info,
        };
        struct mapped_file *mf;

        if (ARRAY_RESERVE(l->mappings, l->cap_mappings, l->n_mappings + 1) < 0)
                return -ENOMEM;
        mf = mapping_pool__intern(&space->symbolizer->mappings, &tmpl);
        if (!mf)
                return -ENOMEM;
        mf->has_debug_info |= tmpl.has_debug_info;
        l->mappings[l->n_mappings++] = mf;
        return 0;
}

static int layout__add_group(struct address_space *space, struct layout *l,
                             const struct proc_map *maps, size_t n)
{
        struct string_pool *strings = &space->symbolizer->strings;
        const char *name;
        struct module *m;

        if (ARRAY_RESERVE(l->modules, l->cap_modules, l->n_modules + 1) < 0)
                return -ENOMEM;
        /* Counted: a path may be new with every process (module__drop). */
        name = string_pool__intern_counted(strings, maps[0].path);
        if (!name)
                return -ENOMEM;
        m = &l->modules[l->n_modules++];
        module__init(m, name, maps, n);
        module__report(space, maps, n, layout__old_module(space, m), m);
        for (size_t i = 0; i < n; i++) {
                if (maps[i].executable && layout__add_mapping(space, l, &maps[i], m) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Whether b continues the load of a's file.  A mapping at file offset 0
 * always starts a new load: only an ELF's first segment maps offset 0, and a
 * process that also maps the file itself (a reader such as libelf, which
 * mmaps the whole file) often gets that mapping right below the loader's,
 * which would otherwise swallow the real load into one wrong group. */
static bool proc_map__same_file(const struct proc_map *a, const struct proc_map *b)
{
        return a->inode == b->inode && a->dev_major == b->dev_major &&
               a->dev_minor == b->dev_minor && b->offset > 0 && b->offset >= a->offset &&
               b->start >= a->limit && strcmp(a->path, b->path) == 0;
}

/* Length of the group of mappings of one file starting at maps[0]. */
static size_t group__length(const struct proc_map *maps, size_t n, bool *executable)
{
        size_t len = 1;

        *executable = maps[0].executable;
        while (len < n && proc_map__same_file(&maps[len - 1], &maps[len])) {
                *executable |= maps[len].executable;
                len++;
        }
        return len;
}

static bool proc_map__is_module(const struct proc_map *m)
{
        return (m->path[0] == '/' && m->inode != 0) || proc_map__is_vdso(m);
}

static int layout__build(struct address_space *space, const struct proc_maps *maps,
                         struct layout *l)
{
        for (size_t i = 0; i < maps->n;) {
                bool executable;
                size_t len = group__length(&maps->maps[i], maps->n - i, &executable);

                if (proc_map__is_module(&maps->maps[i]) && executable &&
                    layout__add_group(space, l, &maps->maps[i], len) < 0)
                        return -ENOMEM;
                i += len;
        }
        return 0;
}

static void address_space__unref_mappings(struct address_space *space)
{
        for (size_t i = 0; i < space->n_mappings; i++)
                mapping_pool__unref(&space->symbolizer->mappings, space->mappings[i]);
        space->n_mappings = 0;
}

/* Reports maps to the Dwfl and installs the result.  Even on failure the
 * report session is completed and what was reported is installed, so our
 * arrays always match the Dwfl's modules. */
static int address_space__report(struct address_space *space, const struct proc_maps *maps)
{
        struct layout l = {0};
        int r;

        dwfl_report_begin(space->dwfl);
        r = layout__build(space, maps, &l);
        if (dwfl_report_end(space->dwfl, NULL, NULL) != 0)
                log_warning("pid %d: dwfl_report_end: %s", (int)space->pid, dwfl_errmsg(-1));
        /* The new records took their own references on the files, names
         * and mappings kept.  Mappings first: they point at module names. */
        address_space__unref_mappings(space);
        for (size_t i = 0; i < space->n_modules; i++)
                module__drop(space, &space->modules[i]);
        free(space->modules);
        free(space->mappings);
        space->modules = l.modules;
        space->n_modules = l.n_modules;
        space->mappings = l.mappings;
        space->n_mappings = l.n_mappings;
        return r;
}

int address_space__refresh(struct address_space *space)
{
        char *text = NULL;
        size_t len = 0;
        int r;

        r = proc_maps__read(space->pid, &text, &len);
        if (r < 0)
                return r;
        return address_space__apply_maps(space, text, len);
}

int address_space__apply_maps(struct address_space *space, char *maps_text, size_t len)
{
        _cleanup_free_ char *text = maps_text;
        struct proc_maps maps;
        int r;

        if (space->maps_text && len == space->maps_len && memcmp(text, space->maps_text, len) == 0)
                return 0;
        space->generation++;
        r = proc_maps__parse(text, len, &maps);
        if (r < 0)
                return r;
        r = address_space__report(space, &maps);
        proc_maps__clear(&maps);
        if (r < 0)
                return r;
        free(space->maps_text);
        space->maps_text = take_ptr(text);
        space->maps_len = len;
        return 0;
}

const char *address_space__maps_text(const struct address_space *space, size_t *len)
{
        *len = space->maps_len;
        return space->maps_text;
}

uint64_t address_space__generation(const struct address_space *space)
{
        return space->generation;
}

static int set_debuginfo_path(struct address_space *space)
{
        char *path;

        if (asprintf(&path, "-:.debug:/usr/lib/debug:/proc/%d/root/usr/lib/debug",
                     (int)space->pid) < 0)
                return -ENOMEM;
        free(space->debuginfo_path);
        space->debuginfo_path = path; /* space->callbacks points at the pointer */
        return 0;
}

int address_space__set_pid(struct address_space *space, pid_t pid)
{
        space->pid = pid;
        return set_debuginfo_path(space);
}

struct address_space *address_space__new(struct symbolizer *symbolizer, pid_t pid)
{
        char *text = NULL;
        size_t len = 0;
        int r = proc_maps__read(pid, &text, &len);

        if (r < 0) {
                errno = -r;
                return NULL;
        }
        return address_space__new_with_maps(symbolizer, pid, text, len);
}

struct address_space *address_space__new_with_maps(struct symbolizer *symbolizer, pid_t pid,
                                                   char *maps_text, size_t len)
{
        _cleanup_free_ char *text = maps_text;
        struct address_space *space = calloc(1, sizeof(*space));
        long page_size = sysconf(_SC_PAGESIZE);
        int r;

        if (!space)
                return NULL;
        space->symbolizer = symbolizer;
        space->pid = pid;
        space->page_size = page_size > 0 ? (uint64_t)page_size : 4096;
        if (set_debuginfo_path(space) < 0) {
                free(space);
                errno = ENOMEM;
                return NULL;
        }
        space->callbacks = (Dwfl_Callbacks){
            .find_elf = address_space__find_elf,
            .find_debuginfo = dwfl_standard_find_debuginfo,
            .section_address = dwfl_offline_section_address,
            .debuginfo_path = &space->debuginfo_path,
        };
        space->dwfl = dwfl_begin(&space->callbacks);
        r = space->dwfl ? address_space__apply_maps(space, take_ptr(text), len) : -ENOMEM;
        if (r < 0) {
                address_space__free(space);
                errno = -r;
                return NULL;
        }
        return space;
}

void address_space__free(struct address_space *space)
{
        if (!space)
                return;
        if (space->dwfl)
                dwfl_end(space->dwfl);
        address_space__unref_mappings(space);
        for (size_t i = 0; i < space->n_modules; i++)
                module__drop(space, &space->modules[i]);
        free(space->modules);
        free(space->mappings);
        free(space->maps_text);
        free(space->debuginfo_path);
        free(space);
}

Dwfl *address_space__dwfl(struct address_space *space)
{
        return space->dwfl;
}

struct module *address_space__module_at(struct address_space *space, uint64_t address)
{
        size_t lo = 0, hi = space->n_modules;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                struct module *m = &space->modules[mid];

                if (address < m->start)
                        hi = mid;
                else if (address >= m->limit)
                        lo = mid + 1;
                else
                        return m;
        }
        return NULL;
}

struct mapped_file *address_space__mapping_mut(struct address_space *space, uint64_t address)
{
        size_t lo = 0, hi = space->n_mappings;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                struct mapped_file *m = space->mappings[mid];

                if (address < m->start)
                        hi = mid;
                else if (address >= m->limit)
                        lo = mid + 1;
                else
                        return m;
        }
        return NULL;
}

const struct mapped_file *address_space__mapping_at(struct address_space *space, uint64_t address)
{
        return address_space__mapping_mut(space, address);
}

bool address_space__file_key(struct address_space *space, uint64_t address, const char **key,
                             uint64_t *bias)
{
        const struct module *m = address_space__module_at(space, address);

        if (!m || !m->dwfl_module || !m->file)
                return false;
        *key = m->file->key;
        *bias = m->bias;
        return true;
}
