/* test_shared_elf.c — unit tests for symbolize/shared_elf.c: address spaces
 * of processes mapping the same files share one image per file (no mapping
 * or fd per process), symbolize through the shared module exactly as
 * through their own, and release everything when the last one goes away,
 * also on refresh after dlclose and under churn, and keep no name of a
 * path that no process maps any more. */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/inline_chain.h"
#include "symbolize/shared_elf.h"
#include "symbolize/symbolizer_internal.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "tests/unit/check.h"

static volatile int sink;
static volatile uintptr_t captured_pc;

__attribute__((noinline)) int shared_target_plain(int x);
__attribute__((noinline)) int shared_target_plain(int x)
{
        sink = x;
        return sink + 1;
}

__attribute__((noinline)) static int capture_pc(void)
{
        captured_pc = (uintptr_t)__builtin_return_address(0);
        __asm__ volatile("" ::: "memory");
        return sink;
}

static inline __attribute__((always_inline)) int shared_target_inner(int x)
{
        sink = x * 3;
        return capture_pc() + sink;
}

__attribute__((noinline)) int shared_target_outer(int x);
__attribute__((noinline)) int shared_target_outer(int x)
{
        sink = x;
        sink = shared_target_inner(x + 1);
        return sink * 2;
}

static size_t count_entries(const char *dir)
{
        DIR *d = opendir(dir);
        size_t n = 0;

        CHECK(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

/* File-backed mappings only: a leaked ELF image is one, while the
 * allocator's own anonymous mappings (malloc arenas, ASan's quarantine,
 * whose size depends on ASAN_OPTIONS) are not. */
static size_t count_file_mappings(void)
{
        FILE *f = fopen("/proc/self/maps", "r");
        char line[4096];
        size_t n = 0;

        CHECK(f);
        while (fgets(line, sizeof(line), f))
                n += strchr(line, '/') != NULL;
        fclose(f);
        return n;
}

static struct elf_file *file_at(struct address_space *space, uintptr_t address)
{
        struct module *m = address_space__module_at(space, address);

        return m ? m->file : NULL;
}

/* The result through the shared module is what the process's own module
 * (libdwfl, the process's load addresses) gives. */
static void check_same_as_own_module(struct address_space *space, uintptr_t address)
{
        struct module *m = address_space__module_at(space, address);
        struct symbolized_pc shared, own;

        CHECK(m && m->dwfl_module && m->file);
        address_space__symbolize(space, address, &shared);
        memset(&own, 0, sizeof(own));
        inline_chain__resolve(m->dwfl_module, address, &space->symbolizer->strings, &own);
        CHECK(shared_elf__symbols(m->file, space->pid, m->name) != NULL); /* was used */
        if (shared.n_lines != own.n_lines)
                fprintf(stderr, "%#" PRIxPTR ": %zu lines shared, %zu own\n", address,
                        shared.n_lines, own.n_lines);
        CHECK(shared.n_lines == own.n_lines);
        for (size_t i = 0; i < own.n_lines; i++) {
                fprintf(stderr, "  %s at %s:%" PRId64 "\n", own.lines[i].function,
                        own.lines[i].file, own.lines[i].line);
                CHECK(shared.lines[i].function == own.lines[i].function);
                CHECK(shared.lines[i].file == own.lines[i].file);
                CHECK(shared.lines[i].line == own.lines[i].line);
        }
}

static void test_identical(struct address_space *space)
{
        void *getpid_address = dlsym(RTLD_DEFAULT, "getpid");

        CHECK(shared_target_outer(3) != -1 && captured_pc);
        check_same_as_own_module(space, (uintptr_t)&shared_target_plain);
        check_same_as_own_module(space, captured_pc - 1);
        check_same_as_own_module(space, (uintptr_t)getpid_address);
        check_same_as_own_module(space, (uintptr_t)getpid_address + 3);
}

/* The function range of an address comes from the shared symbol table,
 * in the process's own addresses, for our code and for libc's. */
static void test_function_range(struct symbolizer *s)
{
        struct address_space *space = address_space__new(s, getpid());
        uintptr_t plain = (uintptr_t)&shared_target_plain;
        uintptr_t libc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
        uint64_t start, end;
        const char *name = NULL;

        CHECK(space);
        CHECK(address_space__function_range(space, plain + 1, &start, &end, &name));
        CHECK(start == plain && end > plain + 1 && strcmp(name, "shared_target_plain") == 0);
        CHECK(address_space__function_range(space, libc, &start, &end, NULL));
        CHECK(start <= libc && libc < end);
        CHECK(!address_space__function_range(space, (uintptr_t)&sink, &start, &end, NULL));
        address_space__free(space);
}

/* The sorted function index answers as dwfl_module_addrinfo() would, for
 * the middle and the first and last byte of every 8th function of libc and
 * of this program (the index replaced it for speed, issue 20; every one
 * would take seconds: dwfl_module_addrinfo scans the table per call). */
static void check_index_like_addrinfo(struct module *m, struct address_space *space)
{
        Dwfl_Module *shared = shared_elf__symbols(m->file, space->pid, m->name);
        int n = shared ? dwfl_module_getsymtab(shared) : 0;
        size_t checked = 0;

        CHECK(n > 1);
        for (int i = 1; i < n; i++) {
                GElf_Sym sym, found_sym;
                GElf_Word shndx;
                GElf_Off offset;
                const char *name = dwfl_module_getsym(shared, i, &sym, &shndx);
                if (i % 8 != 0 || !name || sym.st_size == 0 ||
                    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
                        continue;
                uint64_t probes[3] = {sym.st_value, sym.st_value + sym.st_size / 2,
                                      sym.st_value + sym.st_size - 1};
                for (int p = 0; p < 3; p++) {
                        uint64_t start, end;
                        const char *ours;
                        const char *theirs = dwfl_module_addrinfo(shared, probes[p], &offset,
                                                                  &found_sym, NULL, NULL, NULL);
                        CHECK(theirs);
                        CHECK(shared_elf__function_at(m->file, space->pid, m->name, probes[p],
                                                      &start, &end, &ours));
                        CHECK(start == probes[p] - offset && end == start + found_sym.st_size);
                        checked++;
                }
        }
        fprintf(stderr, "function index: %s: %zu addresses as dwfl_module_addrinfo\n", m->name,
                checked);
        CHECK(checked > 0);
}

static void test_function_index(struct symbolizer *s)
{
        struct address_space *space = address_space__new(s, getpid());

        CHECK(space);
        check_index_like_addrinfo(
            address_space__module_at(space, (uintptr_t)dlsym(RTLD_DEFAULT, "getpid")), space);
        check_index_like_addrinfo(address_space__module_at(space, (uintptr_t)&shared_target_plain),
                                  space);
        address_space__free(space);
}

/* Two processes (us and a forked child) share each file's image: same
 * libelf handle in both Dwfls, one reference per module record. */
static void test_shared(struct symbolizer *s, pid_t child)
{
        struct address_space *a = address_space__new(s, getpid());
        struct address_space *b = address_space__new(s, child);
        uintptr_t libc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
        struct elf_file *file;
        Dwarf_Addr bias_a, bias_b;
        Elf *ea, *eb;

        CHECK(a && b);
        file = file_at(a, libc);
        CHECK(file && file == file_at(b, libc)); /* fork: same addresses */
        CHECK(file->users == 2 && file->elf);
        ea = dwfl_module_getelf(address_space__module_at(a, libc)->dwfl_module, &bias_a);
        eb = dwfl_module_getelf(address_space__module_at(b, libc)->dwfl_module, &bias_b);
        CHECK(ea == file->elf && eb == file->elf && bias_a == bias_b);
        CHECK(bias_a == address_space__module_at(a, libc)->bias);
        test_identical(a);
        /* The child's lookups are the parent's cache hits, and its module
         * never loaded DWARF of its own. */
        test_identical(b);
        address_space__free(a);
        CHECK(file->users == 1 && file->elf && file->symbols);
        address_space__free(b);
        CHECK(file->users == 0 && !file->elf && !file->symbols);
}

/* How many module records of space hold a reference on file. */
static unsigned int records_of(struct address_space *space, const struct elf_file *file)
{
        unsigned int n = 0;

        for (size_t i = 0; i < space->n_modules; i++)
                n += space->modules[i].file == file;
        return n;
}

/* Refresh keeps one reference per record, and drops the image of a
 * library no longer mapped.  (The test profiles itself, so its own mapping
 * of a shared image can change a library's maps group; only the invariant
 * "references == records" is exact here.) */
static void test_refresh_release(struct symbolizer *s)
{
        struct address_space *space = address_space__new(s, getpid());
        struct symbolized_pc pc;
        struct elf_file *file;
        void *handle, *fn;

        CHECK(space);
        handle = dlopen("libBrokenLocale.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
                fprintf(stderr, "skipping refresh test: %s\n", dlerror());
                address_space__free(space);
                return;
        }
        fn = dlsym(handle, "__ctype_get_mb_cur_max");
        CHECK(fn && address_space__refresh(space) == 0);
        file = file_at(space, (uintptr_t)fn);
        CHECK(file && file->users == 1 && file->elf);
        address_space__symbolize(space, (uintptr_t)fn, &pc);
        CHECK(strcmp(pc.lines[0].function, "__ctype_get_mb_cur_max") == 0);
        CHECK(file->symbols);
        CHECK(address_space__refresh(space) == 0);
        CHECK(file->users == records_of(space, file));
        dlclose(handle);
        CHECK(address_space__refresh(space) == 0);
        CHECK(file->users == records_of(space, file));
        if (address_space__module_at(space, (uintptr_t)fn))
                fprintf(stderr, "skipping release check: dlclose did not unmap\n");
        else
                CHECK(file->users == 0 && !file->elf && !file->symbols);
        test_identical(space); /* other files unaffected */
        address_space__free(space);
        CHECK(file->users == 0 && !file->elf && !file->symbols);
}

/* Churn: address spaces come and go; fds, mappings and references do not
 * accumulate. */
static void test_churn(struct symbolizer *s, pid_t child)
{
        size_t fds = count_entries("/proc/self/fd"), maps = count_file_mappings();
        uintptr_t libc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
        struct elf_file *file = NULL;
        struct symbolized_pc pc;

        for (int i = 0; i < 100; i++) {
                struct address_space *space = address_space__new(s, i % 2 ? child : getpid());

                CHECK(space);
                address_space__symbolize(space, libc + (uintptr_t)(i % 7), &pc);
                file = file_at(space, libc);
                CHECK(file && file->users == 1);
                address_space__free(space);
                CHECK(file->users == 0 && !file->elf);
        }
        fprintf(stderr, "churn: fds %zu -> %zu, maps %zu -> %zu\n", fds,
                count_entries("/proc/self/fd"), maps, count_file_mappings());
        CHECK(count_entries("/proc/self/fd") == fds);
        CHECK(count_file_mappings() == maps);
}

/* Copies the file at `from` to `to`; false when it cannot. */
static bool copy_file(const char *from, const char *to)
{
        _cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int out = -1;
        struct stat st;

        if (in < 0 || fstat(in, &st) < 0)
                return false;
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        return out >= 0 && sendfile(out, in, NULL, (size_t)st.st_size) == st.st_size;
}

/* A library loaded from a new path by every process (a program unpacked
 * to a fresh directory per run): the address spaces gone, the pool keeps
 * none of the paths (issue 20: one name per library per process, for good). */
static void test_unique_paths(struct symbolizer *s)
{
        void *probe = dlopen("libBrokenLocale.so.1", RTLD_NOW | RTLD_LOCAL);
        size_t strings[4] = {0};
        Dl_info info;
        char dir[] = "/tmp/profd-unit-XXXXXX";

        if (!probe || !dladdr(dlsym(probe, "__ctype_get_mb_cur_max"), &info) || !mkdtemp(dir)) {
                fprintf(stderr, "skipping unique-path test\n");
                return;
        }
        for (int i = 0; i < 4; i++) {
                char path[64];
                struct address_space *space;
                void *handle;

                snprintf(path, sizeof(path), "%s/lib%d.so", dir, i);
                CHECK(copy_file(info.dli_fname, path));
                handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                CHECK(handle);
                space = address_space__new(s, getpid());
                CHECK(space);
                address_space__free(space);
                dlclose(handle);
                unlink(path);
                strings[i] = s->strings.tab.n_nodes;
        }
        rmdir(dir);
        dlclose(probe);
        fprintf(stderr, "unique paths: strings %zu %zu %zu %zu\n", strings[0], strings[1],
                strings[2], strings[3]);
        /* The first may add the build-id's key, which stays. */
        CHECK(strings[1] == strings[2] && strings[2] == strings[3]);
}

int main(void)
{
        struct symbolizer *s = symbolizer__new();
        pid_t child;
        int status;

        CHECK(s);
        if (getenv("TEST_DEBUG"))
                log_set_level(LOG_LEVEL_DEBUG);
        child = fork();
        CHECK(child >= 0);
        if (child == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed CHECK exits the parent */
                if (getppid() == 1)
                        _exit(0);
                pause();
                _exit(0);
        }
        test_function_range(s);
        test_function_index(s);
        test_shared(s, child);
        test_refresh_release(s);
        test_churn(s, child);
        test_unique_paths(s);
        kill(child, SIGKILL);
        CHECK(waitpid(child, &status, 0) == child);
        symbolizer__free(s);
        fprintf(stderr, "shared_elf: ok\n");
        return 0;
}
