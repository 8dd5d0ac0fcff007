/* test_symbolize.c — unit tests for symbolize/: the test symbolizes
 * addresses in its own process (a plain function, an inlined function, libc,
 * a library dlopen'ed after the first report), checks the caches and the
 * demangler, and feeds the maps parser hostile lines. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "symbolize/demangle.h"
#include "symbolize/mapping_pool.h"
#include "symbolize/proc_maps.h"
#include "symbolize/source_path.h"
#include "util/string_pool.h"
#include "symbolize/symbolizer.h"
#include "util/cleanup.h"
#include "tests/unit/check.h"

static volatile int sink;
static volatile uintptr_t captured_pc;

static const int plain_line = __LINE__ + 2;
__attribute__((noinline)) int symbolize_target_plain(int x);
__attribute__((noinline)) int symbolize_target_plain(int x)
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

static const int inner_call_line = __LINE__ + 4;
static inline __attribute__((always_inline)) int symbolize_target_inner(int x)
{
        sink = x * 3;
        int r = capture_pc();
        return r + sink;
}

static const int outer_call_line = __LINE__ + 5;
__attribute__((noinline)) int symbolize_target_outer(int x);
__attribute__((noinline)) int symbolize_target_outer(int x)
{
        sink = x;
        int r = symbolize_target_inner(x + 1);
        sink = r;
        return sink * 2;
}

static bool ends_with(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);

        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool near(int64_t line, int expected)
{
        return line >= expected - 2 && line <= expected + 2;
}

static void print_pc(const char *what, const struct symbolized_pc *pc)
{
        fprintf(stderr, "%s %#" PRIx64 " in %s:\n", what, pc->address,
                pc->mapping ? pc->mapping->path : "(no mapping)");
        for (size_t i = 0; i < pc->n_lines; i++)
                fprintf(stderr, "  %s at %s:%" PRId64 "\n", pc->lines[i].function,
                        pc->lines[i].file, pc->lines[i].line);
}

#define _cleanup_symbolizer_    _cleanup_(symbolizer__freep)
#define _cleanup_address_space_ _cleanup_(address_space__freep)

static void test_plain(struct address_space *space)
{
        struct symbolized_pc pc;

        address_space__symbolize(space, (uintptr_t)&symbolize_target_plain, &pc);
        print_pc("plain", &pc);
        CHECK(pc.n_lines == 1);
        CHECK(strcmp(pc.lines[0].function, "symbolize_target_plain") == 0);
        CHECK(ends_with(pc.lines[0].file, "test_symbolize.c"));
        CHECK(near(pc.lines[0].line, plain_line));
        CHECK(pc.mapping);
        CHECK(pc.mapping->has_debug_info);
        CHECK(strlen(pc.mapping->build_id_hex) == 40);
}

static void test_inline(struct address_space *space)
{
        struct symbolized_pc pc;

        CHECK(symbolize_target_outer(5) != -1);
        CHECK(captured_pc != 0);
        address_space__symbolize(space, captured_pc - 1, &pc);
        print_pc("inline", &pc);
        CHECK(pc.n_lines == 2);
        CHECK(strcmp(pc.lines[0].function, "symbolize_target_inner") == 0);
        CHECK(ends_with(pc.lines[0].file, "test_symbolize.c"));
        CHECK(near(pc.lines[0].line, inner_call_line));
        CHECK(strcmp(pc.lines[1].function, "symbolize_target_outer") == 0);
        CHECK(ends_with(pc.lines[1].file, "test_symbolize.c"));
        CHECK(near(pc.lines[1].line, outer_call_line));
}

static void test_libc(struct address_space *space)
{
        void *getpid_address = dlsym(RTLD_DEFAULT, "getpid");
        struct symbolized_pc pc;

        CHECK(getpid_address);
        address_space__symbolize(space, (uintptr_t)getpid_address, &pc);
        print_pc("libc", &pc);
        CHECK(strstr(pc.lines[0].function, "getpid"));
        CHECK(pc.mapping && strstr(pc.mapping->path, "libc"));
        CHECK(pc.mapping == address_space__mapping_at(space, (uintptr_t)getpid_address));
}

/* A second lookup, even from another address space of the same process,
 * is served from the cache: same interned pointers. */
/* The vDSO has no file but is a module: clock_gettime is found in it. */
static void test_vdso(struct address_space *space)
{
        uint64_t base = getauxval(AT_SYSINFO_EHDR);
        const struct mapped_file *m;
        bool found = false;

        if (!base) {
                fprintf(stderr, "skipping vdso test: no vDSO\n");
                return;
        }
        m = address_space__mapping_at(space, base);
        CHECK(m && strcmp(m->path, "[vdso]") == 0);
        CHECK(m->build_id_hex[0]);
        for (uint64_t a = m->start; a < m->limit && !found; a += 4) {
                struct symbolized_pc pc;

                address_space__symbolize(space, a, &pc);
                CHECK(pc.mapping == m);
                found = strstr(pc.lines[pc.n_lines - 1].function, "clock_gettime") != NULL;
        }
        CHECK(found);
}

static void test_cache(struct symbolizer *s, struct address_space *space)
{
        _cleanup_address_space_ struct address_space *other = address_space__new(s, getpid());
        struct symbolized_pc a, b;

        CHECK(other);
        address_space__symbolize(space, captured_pc - 1, &a);
        address_space__symbolize(other, captured_pc - 1, &b);
        CHECK(a.n_lines == b.n_lines && a.mapping == b.mapping);
        for (size_t i = 0; i < a.n_lines; i++)
                CHECK(a.lines[i].function == b.lines[i].function &&
                      a.lines[i].file == b.lines[i].file && a.lines[i].line == b.lines[i].line);
}

static void test_unknown(struct address_space *space)
{
        struct symbolized_pc pc;

        address_space__symbolize(space, 16, &pc);
        CHECK(pc.n_lines == 1 && !pc.mapping);
        CHECK(pc.lines[0].function[0] == '\0' && pc.lines[0].file[0] == '\0');
        CHECK(pc.lines[0].line == 0);
        CHECK(!address_space__mapping_at(space, (uint64_t)(uintptr_t)&sink));
}

/* dlopen after the first report: refresh finds the new library and keeps
 * the Dwfl object (the unwinder holds it). */
static void test_refresh(struct address_space *space)
{
        Dwfl *dwfl = address_space__dwfl(space);
        const struct mapped_file *libc_mapping =
            address_space__mapping_at(space, (uintptr_t)dlsym(RTLD_DEFAULT, "getpid"));
        Dwfl_Module *libc_module = dwfl_addrmodule(dwfl, libc_mapping->start);
        struct symbolized_pc pc;
        void *handle, *fn;

        CHECK(libc_module);
        CHECK(address_space__refresh(space) == 0);
        handle = dlopen("libBrokenLocale.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
                fprintf(stderr, "skipping refresh test: %s\n", dlerror());
                return;
        }
        fn = dlsym(handle, "__ctype_get_mb_cur_max");
        CHECK(fn);
        CHECK(!address_space__mapping_at(space, (uintptr_t)fn));
        CHECK(address_space__refresh(space) == 0);
        CHECK(address_space__dwfl(space) == dwfl);
        address_space__symbolize(space, (uintptr_t)fn, &pc);
        print_pc("dlopen", &pc);
        CHECK(pc.mapping && strstr(pc.mapping->path, "libBrokenLocale"));
        CHECK(strcmp(pc.lines[0].function, "__ctype_get_mb_cur_max") == 0);
        CHECK(address_space__mapping_at(space, (uintptr_t)dlsym(RTLD_DEFAULT, "getpid")) ==
              libc_mapping);
        /* Unchanged files keep their libdwfl module (and its loaded DWARF). */
        CHECK(dwfl_addrmodule(dwfl, libc_mapping->start) == libc_module);
        dlclose(handle);
        CHECK(address_space__refresh(space) == 0);
        test_plain(space);
}

static void test_demangle(void)
{
        _cleanup_free_ char *run = cxx_name__demangle("_ZN4demo6Worker3runEv");
        _cleanup_free_ char *bad = cxx_name__demangle("_ZN4demo");

        CHECK(run && strcmp(run, "demo::Worker::run()") == 0);
        CHECK(!bad);
        CHECK(!cxx_name__demangle("f"));
        CHECK(!cxx_name__demangle("main"));
        CHECK(!cxx_name__demangle(NULL));
}

static void test_maps_parse(void)
{
        static const char text[] =
            "55d0c0a00000-55d0c0a01000 r-xp 00001000 fd:01 1234   /usr/bin/a b (deleted)\n"
            "garbage line\n"
            "ffffffffffffffffff-1 r-xp 0 0:0 0\n"
            "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
            "2000-1000 r-xp 00000000 00:00 0\n"
            "7f0000002000-7f0000003000 r-xp 00000000 08:02 99999999999999999999999 /x\n"
            "7f0000004000-7f0000005000 r-x";
        struct proc_maps maps;

        CHECK(proc_maps__parse(text, sizeof(text) - 1, &maps) == 0);
        CHECK(maps.n == 2);
        CHECK(maps.maps[0].start == 0x55d0c0a00000 && maps.maps[0].limit == 0x55d0c0a01000);
        CHECK(maps.maps[0].offset == 0x1000 && maps.maps[0].executable);
        CHECK(maps.maps[0].dev_major == 0xfd && maps.maps[0].inode == 1234);
        CHECK(maps.maps[0].deleted && strcmp(maps.maps[0].path, "/usr/bin/a b") == 0);
        CHECK(!maps.maps[1].executable && maps.maps[1].path[0] == '\0');
        proc_maps__clear(&maps);
        CHECK(proc_maps__parse("", 0, &maps) == 0 && maps.n == 0);
        proc_maps__clear(&maps);
}

static void test_source_path(void)
{
        static const char *const cases[][3] = {
            {"/tmp/build", "../../work/x.c", "/work/x.c"},
            {NULL, "a/./b/../c.c", "a/c.c"},
            {"/", "../x", "/x"},
            {NULL, "../../x", "../../x"},
            {"relative", "y.c", "y.c"},
            {"/a", "/abs//y/./z.c", "/abs/y/z.c"},
            {"/a/b", "c/../../d.c", "/a/d.c"},
            {NULL, "a/..", "."},
            {NULL, "", ""},
        };
        struct string_pool pool;

        string_pool__init(&pool, 42);
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                const char *got = source_path__intern(&pool, cases[i][0], cases[i][1]);

                if (strcmp(got, cases[i][2]) != 0)
                        fprintf(stderr, "source_path(%s, %s) = %s\n", cases[i][0], cases[i][1],
                                got);
                CHECK(strcmp(got, cases[i][2]) == 0);
        }
        CHECK(source_path__intern(&pool, "/w", "../x.c") ==
              source_path__intern(&pool, NULL, "/x.c"));
        string_pool__clear(&pool);
}

/* Interned mappings are shared, counted, freed with their last holder, and
 * a re-created one gets a new serial even if malloc reuses the memory. */
static void test_mapping_pool(void)
{
        struct mapping_pool pool;
        struct mapped_file key = {
            .start = 0x1000, .limit = 0x2000, .path = "/bin/x", .build_id_hex = ""};

        mapping_pool__init(&pool, 42);
        struct mapped_file *a = mapping_pool__intern(&pool, &key);
        struct mapped_file *b = mapping_pool__intern(&pool, &key);
        CHECK(a && a == b && a->serial == 1);
        uint64_t first_serial = a->serial;
        mapping_pool__unref(&pool, a);
        CHECK(pool.tab.n_nodes == 1); /* b still holds it */
        mapping_pool__unref(&pool, b);
        CHECK(pool.tab.n_nodes == 0);
        struct mapped_file *c = mapping_pool__intern(&pool, &key);
        CHECK(c && c->serial != first_serial);
        mapping_pool__unref(&pool, c);
        mapping_pool__clear(&pool);
}

/* A second address space of the same process shares the mappings; freeing
 * it leaves the first one's mappings valid (ASan checks the reads). */
static void test_shared_mappings(struct symbolizer *s, struct address_space *space)
{
        uintptr_t pc = (uintptr_t)symbolize_target_plain;
        struct address_space *other = address_space__new(s, getpid());

        CHECK(other);
        const struct mapped_file *mine = address_space__mapping_at(space, pc);
        CHECK(mine && address_space__mapping_at(other, pc) == mine);
        address_space__free(other);
        CHECK(mine->start <= pc && pc < mine->limit && mine->serial > 0);
}

int main(void)
{
        _cleanup_symbolizer_ struct symbolizer *s = symbolizer__new();
        _cleanup_address_space_ struct address_space *space = NULL;

        test_demangle();
        test_maps_parse();
        test_source_path();
        CHECK(s);
        CHECK(!address_space__new(s, -5));
        space = address_space__new(s, getpid());
        CHECK(space);
        test_plain(space);
        test_inline(space);
        test_libc(space);
        test_vdso(space);
        test_cache(s, space);
        test_unknown(space);
        test_refresh(space);
        test_mapping_pool();
        test_shared_mappings(s, space);
        printf("symbolize: all tests passed\n");
        return 0;
}
