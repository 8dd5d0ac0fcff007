/* test_python_offsets.c — the per-minor entries (python/py_minors.c):
 * the words of the real _Py_DebugOffsets of 3.13, 3.13t, 3.14 and 3.15
 * give the offsets and flags the readers use, the built-in entries give
 * theirs, a table that could not come from a sane build (cut short,
 * offsets outside their struct, free-threaded where not read) is refused
 * with a reason, and an unknown version is refused with a reason that
 * names it. */
#include <stdint.h>
#include <string.h>

#include "python/py_offsets.h"
#include "tests/unit/check.h"

#define WORDS_313 71
#define WORDS_314 81
#define WORDS_315 94

/* Words 1..70 of the .PyRuntime section of Debian's python3.13 3.13.5
 * (x86-64, GIL build), as the tests' 3.13-trixie chroot has it. */
static const uint64_t debian_3135[WORDS_313 - 1] = {
    51185136, 0,  283376, 608,  632, 194976, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16,
    7752,     0,  7768,   7760, 304, 0,      8,    16,   72,   152,  160,  232,  32,   80,
    8,        0,  56,     72,   70,  208,    112,  120,  128,  136,  68,   52,   96,   104,
    200,      16, 8,      416,  24,  88,     168,  32,   24,   16,   40,   24,   16,   48,
    32,       40, 24,     16,   32,  16,     24,   40,   16,   32,   64,   32,   16,   40,
};

/* The same words of that 3.13.5 configured with --disable-gil (the tests'
 * 3.13t-trixie build): every object offset 16 larger. */
static const uint64_t debian_3135t[WORDS_313 - 1] = {
    51185136, 1,  328320, 608,  632, 215616, 7272, 7264, 7344, 7400, 7664, 7648, 7656, 16,
    7760,     0,  7784,   7776, 304, 0,      8,    16,   72,   152,  160,  232,  32,   80,
    8,        0,  56,     72,   70,  224,    128,  136,  144,  152,  84,   68,   112,  120,
    216,      32, 24,     432,  40,  104,    184,  48,   40,   32,   56,   40,   32,   64,
    48,       56, 40,     32,   48,  32,     40,   56,   32,   48,   80,   48,   32,   56,
};

/* Words 1..80 of Debian's python3.14 3.14.8 (the 3.14-forky chroot). */
static const uint64_t debian_3148[WORDS_314 - 1] = {
    51251440, 0,    316616, 784,  808,  225864, 7280, 7272, 7344, 7360, 7408, 7688, 7672, 7680,
    16,       7784, 0,      7800, 7792, 7992,   0,    832,  0,    8,    16,   72,   152,  160,
    232,      32,   88,     8,    0,    56,     80,   74,   64,   0,    216,  112,  120,  128,
    136,      68,   52,     96,   104,  208,    0,    16,   8,    416,  24,   88,   168,  40,
    32,       16,   40,     24,   16,   200,    24,   40,   32,   48,   32,   40,   24,   16,
    32,       16,   24,     40,   16,   32,     64,   32,   16,   40,
};

/* Words 1..93 of the .PyRuntime section of Debian's python3.15 3.15.0-1
 * (x86-64, GIL build); word 0 is the cookie. */
static const uint64_t debian_3150[WORDS_315 - 1] = {
    51314928, 0,    346568, 912,  936,  226240, 7272, 7264, 7336, 7352, 7400, 7592, 7576, 7584,
    16,       7736, 0,      7752, 7744, 7944,   0,    888,  0,    8,    16,   72,   80,   88,
    96,       176,  184,    256,  32,   36,     40,   136,  288,  0,    88,   8,    0,    56,
    80,       74,   64,     0,    216,  112,    120,  128,  136,  68,   52,   96,   104,  208,
    0,        16,   8,      424,  24,   88,     168,  32,   288,  944,  888,  40,   32,   16,
    40,       24,   16,     200,  24,   40,     32,   48,   32,   40,   24,   16,   32,   16,
    24,       40,   16,     32,   64,   32,     16,   40,   56,
};

static void load_words(uint8_t *table, const uint64_t *words, size_t bytes)
{
        memset(table, 0, PY_DEBUG_OFFSETS_MAX);
        memcpy(table, PY_DEBUG_COOKIE, 8);
        memcpy(table + 8, words, bytes);
}

static void load(uint8_t *table)
{
        load_words(table, debian_3150, sizeof(debian_3150));
}

static void set_word(uint8_t *table, unsigned int index, uint64_t value)
{
        memcpy(table + 8u * index, &value, sizeof(value));
}

static char why[256];

static bool parse(const uint8_t *table, size_t len, struct py_offsets *o)
{
        uint32_t version = 0;

        why[0] = '\0';
        return py_offsets__from_debug(table, len, o, &version, why, sizeof(why));
}

static void test_real_table(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;
        uint32_t version = 0;

        load(table);
        CHECK(py_offsets__from_debug(table, sizeof(table), &o, &version, why, sizeof(why)));
        CHECK(version == 0x030f00f0 && o.minor == 15 && o.model == PY_FRAMES_INTERPRETER);
        CHECK(o.runtime_interpreters_head == 936 && o.interp_next == 7264 &&
              o.interp_threads_head == 7336 && o.interp_modules == 7592);
        /* thread_id moved behind base_frame and last_profiled_frame{,_seq}. */
        CHECK(o.tstate_size == 888 && o.tstate_next == 8 && o.tstate_interp == 16 &&
              o.tstate_frame == 72 && o.tstate_thread_id == 176 &&
              o.tstate_native_thread_id == 184 && o.tstate_datastack_chunk == 256);
        CHECK(o.frame_size == 88 && o.frame_previous == 8 && o.frame_code == 0 &&
              o.frame_instr == 56 && o.frame_owner == 74 && o.tagged_executable);
        CHECK(o.code_size == 216 && o.code_filename == 112 && o.code_name == 120 &&
              o.code_qualname == 128 && o.code_linetable == 136 && o.code_firstlineno == 68 &&
              o.code_adaptive == 208);
        CHECK(o.heaptype_cached_keys == 888); /* published from 3.15 on */
        CHECK(o.bytes_size == 16 && o.bytes_data == 32);
        CHECK(o.unicode_state == 32 && o.unicode_length == 16 && o.unicode_ascii_size == 40 &&
              o.unicode_compact_size == 56);
        CHECK(o.gil_model == PY_GIL_INTERP && o.gil_holder == 7744 && o.gil_locked == 7752);
        CHECK(o.managed_dict == PY_MANAGED_INLINE && o.long_tagged);
        CHECK(o.tuple_items == 32 && o.line_format == PY_LINES_LOCATIONS);
        CHECK(o.asyncio.module_debug && o.asyncio.awaiting.slot == 2 && !o.free_threaded);
}

static void test_real_313(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;

        load_words(table, debian_3135, sizeof(debian_3135));
        CHECK(parse(table, sizeof(table), &o) && o.minor == 13);
        CHECK(o.runtime_interpreters_head == 632 && o.interp_threads_head == 7344 &&
              o.interp_modules == 7656 && o.tstate_size == 304 && o.tstate_thread_id == 152 &&
              o.frame_size == 80 && o.frame_owner == 70 && o.code_size == 208 &&
              o.code_adaptive == 200 && o.unicode_ascii_size == 40);
        /* The entry's fixed values: not in 3.13's debug offsets. */
        CHECK(o.code_firsttraceable == 184 && o.heaptype_cached_keys == 880 &&
              o.unicode_compact_size == 56 && o.tuple_items == 24);
        CHECK(o.executable_may_be_none && !o.tagged_executable && o.instr_is_current &&
              o.gil_model == PY_GIL_INTERP && o.gil_holder == 7760 && o.object_extra == 0);
        CHECK(o.asyncio.task_size == 144 && o.asyncio.task_name == 128 &&
              o.asyncio.scheduled_tasks && !o.asyncio.module_debug);
}

static void test_real_313t(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;

        load_words(table, debian_3135t, sizeof(debian_3135t));
        CHECK(parse(table, sizeof(table), &o) && o.minor == 13);
        CHECK(o.free_threaded && o.object_extra == 16 && o.gil_model == PY_GIL_NONE);
        CHECK(o.code_filename == 128 && o.unicode_ascii_size == 56 && o.tuple_items == 40);
        /* Fixed values move with the larger object header. */
        CHECK(o.code_firsttraceable == 200 && o.heaptype_cached_keys == 896 &&
              o.unicode_compact_size == 72);
}

static void test_real_314(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;

        load_words(table, debian_3148, sizeof(debian_3148));
        CHECK(parse(table, sizeof(table), &o) && o.minor == 14);
        CHECK(o.runtime_interpreters_head == 808 && o.interp_modules == 7688 &&
              o.tstate_size == 832 && o.frame_size == 88 && o.frame_owner == 74 &&
              o.code_adaptive == 208 && o.gil_holder == 7792 && o.gil_locked == 7800);
        CHECK(o.tagged_executable && !o.executable_may_be_none && o.code_firsttraceable == 0 &&
              o.heaptype_cached_keys == 880 && o.unicode_compact_size == 56 && o.tuple_items == 32);
        CHECK(o.asyncio.module_debug && o.asyncio.task_size == 0 && o.asyncio.awaiting.slot == 1);
        table[16] = 1; /* 3.14t: not read yet */
        CHECK(!parse(table, sizeof(table), &o) && strstr(why, "CPython 3.14.8: free-threaded"));
}

/* 3.9–3.12: the whole layout is the entry; 3.13+ need the target's table. */
static void test_built_in(void)
{
        struct py_offsets o;

        CHECK(py_offsets__for_minor(9, &o) && o.model == PY_FRAMES_OBJECTS &&
              o.line_format == PY_LINES_LNOTAB && o.asyncio.awaiting.frame_object);
        CHECK(!o.version_symbol); /* its version is read from .rodata */
        CHECK(py_offsets__for_minor(10, &o) && !o.version_symbol && o.line_format == PY_LINES_310 &&
              o.asyncio.task_size == 0 && o.asyncio.awaiting.state == 0);
        CHECK(py_offsets__for_minor(11, &o) && o.version_symbol && o.frame_is_entry == 68 &&
              o.line_format == PY_LINES_LOCATIONS && !o.asyncio.scheduled_tasks);
        CHECK(py_offsets__for_minor(12, &o) && o.gil_model == PY_GIL_INTERP_POINTER &&
              o.asyncio.scheduled_tasks && o.tuple_items == 24);
        CHECK(!py_offsets__for_minor(8, &o) && !py_offsets__for_minor(13, &o) &&
              !py_offsets__for_minor(16, &o));
}

/* A minor without an entry is refused with a reason that names it and
 * the minors that are read: the one warning a user sees. */
static void test_unknown_version(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;

        load(table);
        set_word(table, 1, 0x031000f0); /* 3.16.0 final, on 3.15's words */
        CHECK(!parse(table, sizeof(table), &o));
        CHECK(strstr(why, "CPython 3.16.0:") && strstr(why, "3.9 to 3.15"));
        set_word(table, 1, 0x031100a1); /* 3.17.0a1 */
        CHECK(!parse(table, sizeof(table), &o) && strstr(why, "CPython 3.17.0a1:"));
        set_word(table, 1, 0x040000f0);
        CHECK(!parse(table, sizeof(table), &o) && strstr(why, "CPython 4.0.0:"));
        /* Only the minor known, from a file name. */
        py_offsets__why_unsupported(3u << 24 | 8u << 16, "no layout", why, sizeof(why));
        CHECK(strstr(why, "CPython 3.8: no layout") && strstr(why, "free-threaded: 3.13"));
}

static void test_refused(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;

        load(table);
        CHECK(!parse(table, 8u * (WORDS_315 - 1), &o) && why[0]); /* unicode cut off */
        load(table);
        set_word(table, 30, 4096); /* thread_id beyond sizeof(PyThreadState) */
        CHECK(!parse(table, sizeof(table), &o) && why[0]);
        load(table);
        set_word(table, 67, 1u << 20); /* ht_cached_keys far outside the type */
        CHECK(!parse(table, sizeof(table), &o) && why[0]);
        load(table);
        set_word(table, 93, 4000); /* compact unicode header */
        CHECK(!parse(table, sizeof(table), &o) && why[0]);
        load(table);
        set_word(table, 2, 1); /* free-threaded */
        CHECK(!parse(table, sizeof(table), &o) && why[0]);
}

int main(void)
{
        test_real_table();
        test_real_313();
        test_real_313t();
        test_real_314();
        test_built_in();
        test_refused();
        test_unknown_version();
        return 0;
}
