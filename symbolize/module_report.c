/* module_report.c — one mapped ELF file becomes one libdwfl module.
 *
 * libdwfl's own dwfl_linux_proc_report opens mapped files by their host
 * path, which is wrong for containers and replaced binaries.  So we report
 * each file ourselves: open it through target_file (map_files, then the
 * target's root), check that it is an ELF file whose segments match the
 * mappings (load_bias), look up its process-independent elf_file record,
 * and report it with the verified bias.  The image itself is shared by
 * every process mapping the same file (shared_elf.c): the module is
 * reported with dwfl_report_module() over the range dwfl_report_elf()
 * would compute, and the find_elf callback (address_space.c) hands libdwfl
 * a reference to the shared image, so no process has a private mapping or
 * fd of it.  The file name given to libdwfl is the path under
 * /proc/PID/root, so that dwfl_standard_find_debuginfo looks for
 * .gnu_debuglink files next to the binary inside the target's filesystem.
 * The vDSO is reported the same way from a memfd copy (vdso.c).  Each
 * module record with a file holds one reference on it (module__release).
 *
 * On refresh, a file still mapped at the same place is re-reported with
 * dwfl_report_module(name, low, high): libdwfl then keeps the existing
 * module with its ELF, DWARF and CFI already loaded, which is both cheaper
 * and required by the unwinder that holds the Dwfl. */
#include "symbolize/module_report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "symbolize/load_bias.h"
#include "symbolize/shared_elf.h"
#include "symbolize/target_file.h"
#include "symbolize/vdso.h"
#include "util/cleanup.h"
#include "util/log.h"

bool module__same(const struct module *a, const struct module *b)
{
        return a->name == b->name && a->inode == b->inode && a->dev_major == b->dev_major &&
               a->dev_minor == b->dev_minor && a->start == b->start &&
               a->first_offset == b->first_offset;
}

static bool module__keep(struct address_space *space, const struct module *old, struct module *m)
{
        Dwfl_Module *mod;

        if (!old || !old->dwfl_module || !old->dwfl_name || !module__same(old, m))
                return false;
        mod = dwfl_report_module(space->dwfl, old->dwfl_name, old->low, old->high);
        if (mod != old->dwfl_module) {
                log_debug("%s: libdwfl did not keep module", old->name);
                return false;
        }
        /* NULL when out of memory: the next refresh reports it anew. */
        m->dwfl_name = string_pool__intern_counted(&space->symbolizer->strings, old->dwfl_name);
        m->dwfl_module = mod;
        m->file = old->file;
        shared_elf__ref(m->file); /* the old record's is released with it */
        m->bias = old->bias;
        m->low = old->low;
        m->high = old->high;
        return true;
}

/* Gives libdwfl the shared image now (our find_elf callback finds it
 * through space->reporting), checks that libdwfl computed the bias we
 * verified, and lets the callback find the address space should libdwfl
 * ever need to reopen. */
static void module__adopt(struct address_space *space, Dwfl_Module *mod, struct module *m)
{
        Dwarf_Addr low = 0, high = 0, bias = 0;
        void **userdata = NULL;
        bool loaded;

        dwfl_module_info(mod, &userdata, &low, &high, NULL, NULL, NULL, NULL);
        if (userdata)
                *userdata = space;
        space->reporting = m;
        loaded = dwfl_module_getelf(mod, &bias) != NULL;
        space->reporting = NULL;
        if (!loaded || bias != m->bias)
                log_warning("%s: libdwfl bias %#jx differs from %#jx", m->name, (uintmax_t)bias,
                            (uintmax_t)m->bias);
        m->dwfl_module = mod;
        m->low = low;
        m->high = high;
}

/* Opens and checks the file; returns the fd (still ours) or -errno. */
static int module__open(struct address_space *space, const struct proc_map *maps, size_t n,
                        struct module *m)
{
        _cleanup_(elf_endp) Elf *elf = NULL;
        _cleanup_close_ int fd = proc_map__is_vdso(&maps[0])
                                     ? vdso__open(space->pid, &maps[0])
                                     : target_file__open_mapping(space->pid, &maps[0]);

        if (fd < 0)
                return fd;
        /* ELF_C_READ, not mmap: the target may truncate the file under us. */
        elf = elf_begin(fd, ELF_C_READ, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF)
                return -ENOEXEC;
        if (!load_bias__compute(elf, maps, n, space->page_size, &m->bias))
                return -ENOEXEC;
        m->file = elf_files__get(&space->symbolizer->files, elf, fd);
        if (!m->file)
                return -ENOMEM;
        return take_fd(fd);
}

/* libdwfl keeps a module of the previous report that is reported again
 * with the same name and range, with the image it already has.  Naming
 * modules by path and file identity means it only ever keeps one for the
 * same file (same build-id): a different file later mapped at the same
 * place under the same path (a non-PIE program exec'ing its upgraded self)
 * gets a module of its own. */
static const char *module__dwfl_name(struct address_space *space, const struct module *m)
{
        _cleanup_free_ char *name = NULL;

        if (asprintf(&name, "%s [%s]", m->name, m->file->key) < 0)
                return NULL;
        return string_pool__intern_counted(&space->symbolizer->strings, name);
}

static void module__report_new(struct address_space *space, const struct proc_map *maps, size_t n,
                               struct module *m)
{
        int fd = module__open(space, maps, n, m);
        uint64_t low, high;
        Dwfl_Module *mod;

        if (fd >= 0)
                fd = shared_elf__acquire(m->file, fd); /* consumes fd */
        if (fd < 0) {
                log_debug("pid %d: %s: not symbolized: %s", (int)space->pid, m->name,
                          strerror(-fd));
                m->file = NULL;
                return;
        }
        m->dwfl_name = module__dwfl_name(space, m);
        mod = m->dwfl_name && shared_elf__range(m->file, m->bias, &low, &high)
                  ? dwfl_report_module(space->dwfl, m->dwfl_name, low, high)
                  : NULL;
        if (!mod) {
                log_debug("pid %d: %s: %s", (int)space->pid, m->name, dwfl_errmsg(-1));
                module__release(m);
                return;
        }
        module__adopt(space, mod, m);
}

void module__release(struct module *m)
{
        if (m->file)
                shared_elf__release(m->file);
        m->file = NULL;
}

void module__drop(struct address_space *space, struct module *m)
{
        module__release(m);
        string_pool__unref(&space->symbolizer->strings, m->dwfl_name);
        string_pool__unref(&space->symbolizer->strings, m->name);
        m->dwfl_name = m->name = NULL;
}

void module__init(struct module *m, const char *name, const struct proc_map *maps, size_t n)
{
        *m = (struct module){
            .name = name,
            .start = maps[0].start,
            .limit = maps[n - 1].limit,
            .inode = maps[0].inode,
            .dev_major = maps[0].dev_major,
            .dev_minor = maps[0].dev_minor,
            .first_offset = maps[0].offset,
        };
}

void module__report(struct address_space *space, const struct proc_map *maps, size_t n,
                    const struct module *old, struct module *m)
{
        if (!module__keep(space, old, m))
                module__report_new(space, maps, n, m);
}
