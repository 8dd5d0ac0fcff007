/* shared_elf.c — per-binary state shared by build-id across processes.
 *
 * Why.  Before this file, every address space reported each mapped file to
 * its own Dwfl with dwfl_report_elf(), so libdwfl mmap'ed the whole file
 * again, kept one more fd open, and, the first time that process missed the
 * shared line cache, parsed the file's DWARF again.  Measured on the daemon
 * (bench/run.py question 7, 50 idle Python processes, heaptrack and
 * /proc/PID/smaps): each process cost about 1.3 MB of file-backed RSS (the
 * pages libdwfl touched in its private mapping of python3, libc, libm, ...,
 * counted once per mapping) and 8 fds; and one process's first miss in libc
 * decompressed and parsed libc6-dbg's DWARF, 10 MB of heap, which every
 * other process would pay again on its own first miss (a new code path, a
 * new worker after churn, the line cache emptied when full): N processes,
 * N copies.  The resolved-lines cache alone cannot prevent that.
 *
 * What.  Two things per elf_file (one per build-id), held only while some
 * live address space maps the file (`users`, one per module record):
 *
 *   - the image: one libelf handle (ELF_C_READ_MMAP_PRIVATE, as libdwfl
 *     opens files itself, disconnected from its fd at once).  Modules of the
 *     per-process Dwfls are reported with dwfl_report_module() and receive a
 *     reference to this handle from the find_elf callback (elf_begin() of a
 *     handle only bumps its reference count), so libdwfl's CFI for unwinding
 *     reads one mapping, whatever the number of processes, with no fd.
 *   - a symbolization Dwfl: one module at load bias 0 on the same image, in
 *     which the line cache's file-relative address is the lookup address.
 *     Line-cache misses of every process resolve there, so DWARF and the
 *     symbol table are parsed once per binary.  Its debuginfo is looked up
 *     from the first process that needed it, as the line cache already made
 *     that process's answer everyone's: found, with the symbol table, when
 *     the Dwfl is made, while that process's /proc/PID/root is certainly
 *     there; its DWARF is parsed on the first line lookup (shared_elf__dwarf).
 *
 * The last release (the last process mapping the file exited, exec'ed or
 * unmapped it) frees both, so per-binary memory follows the live processes
 * and nothing grows under churn.  Chosen over making Dwfls lazy or evicting
 * them per process because the unwinder needs a per-process Dwfl (with the
 * process's own load addresses) on every new stack anyway; what it does
 * not need is a private copy of each file, and sharing is a small change:
 * libdwfl's module, CFI and address-range logic are unchanged.
 *
 * Not thread-safe, like the rest of the symbolizer: the tracer thread owns
 * it (libelf's reference count is only protected when libelf is built with
 * thread safety). */
#include "symbolize/shared_elf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/log.h"

/* One function symbol of the file: [start, end) at load bias 0. */
struct function_symbol {
        uint64_t start, end;
        const char *name; /* in the module's string table */
        bool global;
};

struct shared_symbols {
        Dwfl *dwfl;
        Dwfl_Module *module;
        /* The sized function symbols, by start (global ones last among
         * equal starts), built on the first function_at lookup. */
        struct function_symbol *functions;
        size_t n_functions;
        bool functions_built;
        Dwfl_Callbacks callbacks;
        char *debuginfo_path; /* callbacks.debuginfo_path points here */
        char *file_name;      /* /proc/PID/root/PATH, for .gnu_debuglink */
        struct elf_file *file;
        bool failed;      /* creation failed once: do not retry for this image */
        bool dwarf_tried; /* dwfl_module_getdwarf was called */
};

/* Debuginfo is searched for in the daemon's /usr/lib/debug and in the
 * target's, under /proc/PID/root (containers). */
static char *debuginfo_path_of(pid_t pid)
{
        char *path;

        if (asprintf(&path, "-:.debug:/usr/lib/debug:/proc/%d/root/usr/lib/debug", (int)pid) < 0)
                return NULL;
        return path;
}

int shared_elf__acquire(struct elf_file *file, int fd)
{
        _cleanup_close_ int owned = fd;
        Elf *elf;

        if (file->users > 0) {
                file->users++;
                return 0;
        }
        elf = elf_begin(owned, ELF_C_READ_MMAP_PRIVATE, NULL);
        if (!elf)
                return -ENOEXEC;
        /* Mapped: this only disconnects the fd.  Not mapped (mmap failed):
         * reads the rest now, so the handle never needs the fd again. */
        if (elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDREAD) != 0) {
                elf_end(elf);
                return -ENOEXEC;
        }
        file->elf = elf;
        file->users = 1;
        return 0;
}

void shared_elf__ref(struct elf_file *file)
{
        file->users++;
}

static void shared_symbols__free(struct shared_symbols *s)
{
        if (!s)
                return;
        if (s->dwfl)
                dwfl_end(s->dwfl);
        free(s->functions);
        free(s->debuginfo_path);
        free(s->file_name);
        free(s);
}

void shared_elf__clear(struct elf_file *file)
{
        shared_symbols__free(file->symbols);
        file->symbols = NULL;
        if (file->elf)
                elf_end(file->elf);
        file->elf = NULL;
        file->users = 0;
}

void shared_elf__release(struct elf_file *file)
{
        if (file->users == 0) {
                log_warning("%s: released more often than acquired", file->key);
                return;
        }
        if (--file->users == 0)
                shared_elf__clear(file);
}

Elf *shared_elf__dup(struct elf_file *file)
{
        return file->elf ? elf_begin(-1, ELF_C_READ_MMAP_PRIVATE, file->elf) : NULL;
}

/* The same range as libdwfl's __libdwfl_elf_address_range() for an ET_DYN
 * or ET_EXEC file reported at `bias` with add_p_vaddr: from the first
 * PT_LOAD's aligned address to the end of the last. */
bool shared_elf__range(struct elf_file *file, uint64_t bias, uint64_t *low, uint64_t *high)
{
        size_t phnum;
        bool first = true;

        *low = *high = 0;
        if (!file->elf || elf_getphdrnum(file->elf, &phnum) != 0)
                return false;
        for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr mem, *ph = gelf_getphdr(file->elf, (int)i, &mem);

                if (!ph || ph->p_type != PT_LOAD)
                        continue;
                if (first)
                        *low = bias + (ph->p_vaddr & -ph->p_align);
                first = false;
                if (ph->p_vaddr + ph->p_memsz > 0)
                        *high = bias + ph->p_vaddr + ph->p_memsz;
        }
        return !first && *high > *low;
}

/* find_elf of the symbolization Dwfl: the shared image, never a file. */
static int shared_symbols__find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
                                    Dwarf_Addr base, char **file_name, Elf **elfp)
{
        struct shared_symbols *s = *userdata;

        *elfp = s ? shared_elf__dup(s->file) : NULL;
        if (*elfp && !*file_name)
                *file_name = strdup(s->file_name); /* libdwfl frees it */
        return -1;
}

static struct shared_symbols *shared_symbols__new(struct elf_file *file, pid_t pid,
                                                  const char *path)
{
        struct shared_symbols *s = calloc(1, sizeof(*s));
        uint64_t low, high;
        Dwarf_Addr bias = 1;
        void **userdata = NULL;

        if (!s)
                return NULL;
        s->file = file;
        s->debuginfo_path = debuginfo_path_of(pid);
        if (!s->debuginfo_path)
                goto fail;
        if ((path[0] == '/' ? asprintf(&s->file_name, "/proc/%d/root%s", (int)pid, path)
                            : asprintf(&s->file_name, "%s", path)) < 0) {
                s->file_name = NULL;
                goto fail;
        }
        s->callbacks = (Dwfl_Callbacks){
            .find_elf = shared_symbols__find_elf,
            .find_debuginfo = dwfl_standard_find_debuginfo,
            .section_address = dwfl_offline_section_address,
            .debuginfo_path = &s->debuginfo_path, /* read at each lookup */
        };
        s->dwfl = dwfl_begin(&s->callbacks);
        if (!s->dwfl || !shared_elf__range(file, 0, &low, &high))
                goto fail;
        dwfl_report_begin(s->dwfl);
        s->module = dwfl_report_module(s->dwfl, path, low, high);
        if (s->module)
                dwfl_module_info(s->module, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
        if (userdata)
                *userdata = s;
        if (dwfl_report_end(s->dwfl, NULL, NULL) != 0 || !s->module ||
            !dwfl_module_getelf(s->module, &bias) || bias != 0)
                goto fail;
        /* Now, while pid's root is certainly there.  A stripped file's
         * symbol table is in its debuginfo file, which this finds and maps
         * (file-backed, shared with the page cache) without parsing DWARF. */
        (void)dwfl_module_getsymtab(s->module);
        return s;
fail:
        log_debug("%s: no shared symbolization module: %s", path, dwfl_errmsg(-1));
        shared_symbols__free(s);
        return NULL;
}

static struct shared_symbols *shared_symbols_of(struct elf_file *file, pid_t pid, const char *path)
{
        if (!file->elf)
                return NULL;
        if (!file->symbols) {
                file->symbols = shared_symbols__new(file, pid, path);
                if (!file->symbols) {
                        /* Remember the failure until the image is released. */
                        file->symbols = calloc(1, sizeof(*file->symbols));
                        if (file->symbols)
                                file->symbols->failed = true;
                        return NULL;
                }
        }
        return file->symbols->failed ? NULL : file->symbols;
}

Dwfl_Module *shared_elf__symbols(struct elf_file *file, pid_t pid, const char *path)
{
        struct shared_symbols *s = shared_symbols_of(file, pid, path);

        return s ? s->module : NULL;
}

/* DWARF is parsed on the first line lookup, not with the symbol table:
 * classifying a Python process's native frames needs symbols only, and
 * python3.11's DWARF alone is 10 MB of heap.  The process asking now is
 * alive, so its root is where a debuginfo file not found with the symbol
 * table is searched for. */
Dwfl_Module *shared_elf__dwarf(struct elf_file *file, pid_t pid, const char *path)
{
        struct shared_symbols *s = shared_symbols_of(file, pid, path);
        Dwarf_Addr bias;

        if (!s)
                return NULL;
        if (!s->dwarf_tried) {
                char *now = debuginfo_path_of(pid);
                if (now) {
                        free(s->debuginfo_path);
                        s->debuginfo_path = now;
                }
                (void)dwfl_module_getdwarf(s->module, &bias);
                s->dwarf_tried = true;
        }
        return s->module;
}

/* ------------------------------------------------------ function index */

/* Why an index of our own: dwfl_module_addrinfo() scans the whole symbol
 * table on every call (elfutils 0.188), tens to hundreds of µs in a large
 * binary.  A new Python process classifies each native frame it has not
 * seen (python/py_process.c), and under churn that ran on the tracer
 * thread at every new process's first samples, holding other targets'
 * ptrace events back by several ms (issue 20, bench/RESULTS.md).  Sorted
 * once per binary, a lookup is a binary search. */
static int function_symbol__compare(const void *a, const void *b)
{
        const struct function_symbol *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return (int)x->global - (int)y->global;
}

static void build_functions(struct shared_symbols *s)
{
        int n = dwfl_module_getsymtab(s->module);

        s->functions_built = true;
        if (n <= 1 || !(s->functions = calloc((size_t)n, sizeof(*s->functions))))
                return;
        for (int i = 1; i < n; i++) {
                GElf_Sym sym;
                GElf_Word shndx;
                const char *name = dwfl_module_getsym(s->module, i, &sym, &shndx);
                int type = GELF_ST_TYPE(sym.st_info);

                if (!name || sym.st_size == 0 || shndx == SHN_UNDEF ||
                    (type != STT_FUNC && type != STT_GNU_IFUNC) ||
                    sym.st_value + sym.st_size < sym.st_value)
                        continue;
                s->functions[s->n_functions++] = (struct function_symbol){
                    .start = sym.st_value,
                    .end = sym.st_value + sym.st_size,
                    .name = name,
                    .global = GELF_ST_BIND(sym.st_info) == STB_GLOBAL,
                };
        }
        qsort(s->functions, s->n_functions, sizeof(*s->functions), function_symbol__compare);
}

/* How many symbols starting at or before an address are tried, nearest
 * first, for one that contains it (nested or overlapping ranges). */
#define FUNCTION_LOOKBACK 16

bool shared_elf__function_at(struct elf_file *file, pid_t pid, const char *path, uint64_t address,
                             uint64_t *start, uint64_t *end, const char **name)
{
        struct shared_symbols *s = shared_symbols_of(file, pid, path);
        size_t low = 0, high;

        if (!s)
                return false;
        if (!s->functions_built)
                build_functions(s);
        /* The first symbol starting after address. */
        high = s->n_functions;
        while (low < high) {
                size_t mid = low + (high - low) / 2;
                if (s->functions[mid].start <= address)
                        low = mid + 1;
                else
                        high = mid;
        }
        for (size_t i = low, tried = 0; i > 0 && tried < FUNCTION_LOOKBACK; i--, tried++) {
                const struct function_symbol *f = &s->functions[i - 1];
                if (address < f->end) {
                        *start = f->start;
                        *end = f->end;
                        *name = f->name;
                        return true;
                }
        }
        return false;
}
