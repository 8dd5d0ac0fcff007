/* test_python_offsets.c — py_offsets__from_debug on CPython 3.15's
 * _Py_DebugOffsets: the words of a real table give the offsets the reader
 * uses, and a table that could not come from a sane 3.15 (cut short,
 * offsets outside their struct, free-threaded, a later minor) is refused
 * with a reason. */
#include <stdint.h>
#include <string.h>

#include "python/py_offsets.h"
#include "tests/unit/check.h"

#define WORDS_315 94

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

static void load(uint8_t *table)
{
        memset(table, 0, PY_DEBUG_OFFSETS_MAX);
        memcpy(table, PY_DEBUG_COOKIE, 8);
        memcpy(table + 8, debian_3150, sizeof(debian_3150));
}

static void set_word(uint8_t *table, unsigned int index, uint64_t value)
{
        memcpy(table + 8u * index, &value, sizeof(value));
}

static bool parse(const uint8_t *table, size_t len, struct py_offsets *o, const char **why)
{
        uint32_t version = 0;

        *why = NULL;
        return py_offsets__from_debug(table, len, o, &version, why);
}

static void test_real_table(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;
        const char *why;
        uint32_t version = 0;

        load(table);
        CHECK(py_offsets__from_debug(table, sizeof(table), &o, &version, &why));
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
}

static void test_refused(void)
{
        uint8_t table[PY_DEBUG_OFFSETS_MAX];
        struct py_offsets o;
        const char *why;

        load(table);
        CHECK(!parse(table, 8u * (WORDS_315 - 1), &o, &why) && why); /* unicode cut off */
        load(table);
        set_word(table, 30, 4096); /* thread_id beyond sizeof(PyThreadState) */
        CHECK(!parse(table, sizeof(table), &o, &why) && why);
        load(table);
        set_word(table, 67, 1u << 20); /* ht_cached_keys far outside the type */
        CHECK(!parse(table, sizeof(table), &o, &why) && why);
        load(table);
        set_word(table, 93, 4000); /* compact unicode header */
        CHECK(!parse(table, sizeof(table), &o, &why) && why);
        load(table);
        set_word(table, 2, 1); /* free-threaded */
        CHECK(!parse(table, sizeof(table), &o, &why) && why);
        load(table);
        set_word(table, 1, 0x031000f0); /* 3.16: layout unknown */
        CHECK(!parse(table, sizeof(table), &o, &why) && strstr(why, "minor"));
}

int main(void)
{
        test_real_table();
        test_refused();
        return 0;
}
