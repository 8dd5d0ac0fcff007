/* module_report.c — one mapped ELF file becomes one libdwfl module.
 *
 * libdwfl's own dwfl_linux_proc_report opens mapped files by their host
 * path, which is wrong for containers and replaced binaries.  So we report
 * each file ourselves: open it through target_file (map_files, then the
 * target's root), check that it is an ELF file whose segments match the
 * mappings (load_bias), look up its process-independent elf_file record,
 * and hand the fd to dwfl_report_elf with the verified bias.  The file name
 * given to libdwfl is the path under /proc/PID/root, so that
 * dwfl_standard_find_debuginfo looks for .gnu_debuglink files next to the
 * binary inside the target's filesystem.  The vDSO is reported the same way
 * from a memfd copy (vdso.c).
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
#include "symbolize/target_file.h"
#include "symbolize/vdso.h"
#include "util/cleanup.h"
#include "util/log.h"

static void elfp__end(Elf **elf)
{
        if (*elf)
                elf_end(*elf);
}

bool module__same(const struct module *a, const struct module *b)
{
        return a->name == b->name && a->inode == b->inode && a->dev_major == b->dev_major &&
               a->dev_minor == b->dev_minor && a->start == b->start &&
               a->first_offset == b->first_offset;
}

static bool module__keep(struct address_space *space, const struct module *old, struct module *m)
{
        Dwfl_Module *mod;

        if (!old || !old->dwfl_module || !module__same(old, m))
                return false;
        mod = dwfl_report_module(space->dwfl, old->name, old->low, old->high);
        if (mod != old->dwfl_module) {
                log_debug("%s: libdwfl did not keep module", old->name);
                return false;
        }
        m->dwfl_module = mod;
        m->file = old->file;
        m->bias = old->bias;
        m->low = old->low;
        m->high = old->high;
        return true;
}

/* Checks that libdwfl computed the bias we verified, and lets our find_elf
 * callback find the address space should libdwfl ever need to reopen. */
static void module__adopt(struct address_space *space, Dwfl_Module *mod, struct module *m)
{
        Dwarf_Addr low = 0, high = 0, bias = 0;
        void **userdata = NULL;

        dwfl_module_info(mod, &userdata, &low, &high, NULL, NULL, NULL, NULL);
        if (userdata)
                *userdata = space;
        if (!dwfl_module_getelf(mod, &bias) || bias != m->bias)
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
        _cleanup_(elfp__end) Elf *elf = NULL;
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

static void module__report_new(struct address_space *space, const struct proc_map *maps, size_t n,
                               struct module *m)
{
        _cleanup_close_ int fd = module__open(space, maps, n, m);
        char file_name[PROC_MAPS_MAX_PATH + 64];
        Dwfl_Module *mod;

        if (fd < 0) {
                log_debug("pid %d: %s: not symbolized: %s", (int)space->pid, m->name,
                          strerror(-fd));
                m->file = NULL;
                return;
        }
        if (m->name[0] == '/')
                snprintf(file_name, sizeof(file_name), "/proc/%d/root%s", (int)space->pid, m->name);
        else
                snprintf(file_name, sizeof(file_name), "%s", m->name);
        mod = dwfl_report_elf(space->dwfl, m->name, file_name, fd, m->bias, true);
        if (!mod) {
                log_debug("pid %d: %s: %s", (int)space->pid, m->name, dwfl_errmsg(-1));
                m->file = NULL;
                return;
        }
        take_fd(fd); /* libdwfl closes it with the module */
        module__adopt(space, mod, m);
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
