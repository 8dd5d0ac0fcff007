/* test_python_objects.c — the pure parts of the thread.gil and thread.name
 * readers: locating a dict's entries from a copy of its keys header, int
 * decoding, and the GIL holder test, for each layout family. */
#include <stdint.h>
#include <string.h>

#include "python/py_dict.h"
#include "python/py_gil.h"
#include "python/py_long.h"
#include "python/py_offsets.h"
#include "tests/unit/check.h"

#define KEYS 0x7f0000001000ull

static void put64(uint8_t *p, size_t at, uint64_t v)
{
        memcpy(p + at, &v, sizeof(v));
}

static void put32(uint8_t *p, size_t at, uint32_t v)
{
        memcpy(p + at, &v, sizeof(v));
}

/* 3.9/3.10: dk_size at 8, dk_nentries at 32, indices at 40. */
static void test_table_sized(void)
{
        struct py_offsets o;
        struct py_dict_table t;
        uint8_t h[PY_DICT_HEADER_MAX] = {0};

        CHECK(py_offsets__for_minor(9, &o));
        put64(h, 8, 8);
        put64(h, 32, 5);
        CHECK(py_dict__table(&o, KEYS, h, sizeof(h), &t));
        CHECK(t.entries == KEYS + 40 + 8 && t.n == 5 && t.entry_size == 24);
        CHECK(t.key_at == 8 && t.value_at == 16);
        put64(h, 8, 512); /* 2-byte index slots */
        CHECK(py_dict__table(&o, KEYS, h, sizeof(h), &t));
        CHECK(t.entries == KEYS + 40 + 1024);
        put64(h, 8, 12); /* not a power of two */
        CHECK(!py_dict__table(&o, KEYS, h, sizeof(h), &t));
        put64(h, 8, 8);
        put64(h, 32, 9); /* more entries than slots */
        CHECK(!py_dict__table(&o, KEYS, h, sizeof(h), &t));
        CHECK(!py_dict__table(&o, 3, h, sizeof(h), &t)); /* bad pointer */
}

/* 3.11+: log2_size 8, log2_index_bytes 9, kind 10, nentries 24, indices 32. */
static void test_table_log2(void)
{
        struct py_offsets o;
        struct py_dict_table t;
        uint8_t h[PY_DICT_HEADER_MAX] = {0};

        CHECK(py_offsets__for_minor(11, &o));
        h[8] = 3;
        h[9] = 3;
        h[10] = 1; /* unicode keys: {key, value} */
        put64(h, 24, 4);
        CHECK(py_dict__table(&o, KEYS, h, sizeof(h), &t));
        CHECK(t.entries == KEYS + 32 + 8 && t.n == 4 && t.entry_size == 16);
        CHECK(t.key_at == 0 && t.value_at == 8);
        h[10] = 0; /* general: {hash, key, value} */
        CHECK(py_dict__table(&o, KEYS, h, sizeof(h), &t));
        CHECK(t.entry_size == 24 && t.key_at == 8 && t.value_at == 16);
        h[8] = 20;
        h[9] = 22; /* 4-byte slots */
        put64(h, 24, 1u << 20);
        CHECK(py_dict__table(&o, KEYS, h, sizeof(h), &t));
        CHECK(t.entries == KEYS + 32 + (1u << 22) && t.n == PY_DICT_MAX_ENTRIES);
        h[10] = 7; /* unknown kind */
        CHECK(!py_dict__table(&o, KEYS, h, sizeof(h), &t));
        h[10] = 1;
        h[9] = 30; /* index bytes out of proportion */
        CHECK(!py_dict__table(&o, KEYS, h, sizeof(h), &t));
        CHECK(!py_dict__table(&o, KEYS, h, 16, &t)); /* short copy */
}

static void test_long(void)
{
        struct py_offsets old, tagged;
        uint8_t obj[PY_LONG_READ_MAX] = {0};
        uint64_t ident = 0x7f12345678c0ull, v = 0;

        CHECK(py_offsets__for_minor(11, &old));
        CHECK(py_offsets__for_minor(12, &tagged));
        for (unsigned i = 0; i < 3; i++)
                put32(obj, 24 + 4 * i, (uint32_t)((ident >> (30 * i)) & 0x3fffffff));
        put64(obj, 16, 2); /* ob_size: 2 digits (47 bits) */
        CHECK(py_long__decode(&old, obj, sizeof(obj), &v) && v == ident);
        put64(obj, 16, (uint64_t)-2); /* negative */
        CHECK(!py_long__decode(&old, obj, sizeof(obj), &v));
        put64(obj, 16, 2 << 3); /* lv_tag: 2 digits, positive */
        CHECK(py_long__decode(&tagged, obj, sizeof(obj), &v) && v == ident);
        put64(obj, 16, 2 << 3 | 2); /* negative */
        CHECK(!py_long__decode(&tagged, obj, sizeof(obj), &v));
        put64(obj, 16, 1); /* zero */
        CHECK(py_long__decode(&tagged, obj, sizeof(obj), &v) && v == 0);
        put64(obj, 16, 3 << 3); /* 3 digits: 90 bits, too many if the top is set */
        put32(obj, 32, 0x3fffffff);
        CHECK(!py_long__decode(&tagged, obj, sizeof(obj), &v));
        put32(obj, 32, 0xf); /* 64 bits exactly */
        CHECK(py_long__decode(&tagged, obj, sizeof(obj), &v));
        put32(obj, 24, 0x40000000); /* a digit with bit 30 set */
        CHECK(!py_long__decode(&tagged, obj, sizeof(obj), &v));
        put64(obj, 16, 9 << 3);
        CHECK(!py_long__decode(&tagged, obj, sizeof(obj), &v));

        /* Free-threaded: the same int 16 bytes further in. */
        struct py_offsets ft = tagged;
        ft.object_extra = 16;
        CHECK(py_long__read_size(&tagged) == 40 && py_long__read_size(&ft) == 56);
        memset(obj, 0, sizeof(obj));
        for (unsigned i = 0; i < 2; i++)
                put32(obj, 40 + 4 * i, (uint32_t)((ident >> (30 * i)) & 0x3fffffff));
        put64(obj, 32, 2 << 3);
        CHECK(py_long__decode(&ft, obj, py_long__read_size(&ft), &v) && v == ident);
        CHECK(!py_long__decode(&tagged, obj, py_long__read_size(&tagged), &v) || v != ident);
        CHECK(!py_long__decode(&ft, obj, 40, &v)); /* short copy */
}

static void test_gil(void)
{
        struct py_offsets o311, o312;
        uint8_t region[PY_GIL_REGION_MAX] = {0};
        const uint64_t me = 0x55550000aa00ull, other = 0x55550000bb00ull;

        CHECK(py_offsets__for_minor(11, &o311));
        CHECK(py_gil__region_len(&o311) == 8); /* tstate_current only */
        put64(region, 0, me);
        CHECK(py_gil__holder_is(&o311, region, 8, me) == PY_GIL_HELD);
        CHECK(py_gil__holder_is(&o311, region, 8, other) == PY_GIL_NOT_HELD);
        put64(region, 0, 0); /* nobody */
        CHECK(py_gil__holder_is(&o311, region, 8, me) == PY_GIL_NOT_HELD);
        CHECK(py_gil__holder_is(&o311, NULL, 8, me) == PY_GIL_UNKNOWN);
        CHECK(py_gil__holder_is(&o311, region, 4, me) == PY_GIL_UNKNOWN);

        /* 3.12: last_holder at 8, locked at 16 of the GIL: region [8, 20). */
        CHECK(py_offsets__for_minor(12, &o312));
        CHECK(py_gil__region_len(&o312) == 12);
        memset(region, 0, sizeof(region));
        put64(region, 0, me);
        put32(region, 8, 1);
        CHECK(py_gil__holder_is(&o312, region, 12, me) == PY_GIL_HELD);
        CHECK(py_gil__holder_is(&o312, region, 12, other) == PY_GIL_NOT_HELD);
        put32(region, 8, 0); /* released: last_holder stays but does not count */
        CHECK(py_gil__holder_is(&o312, region, 12, me) == PY_GIL_NOT_HELD);

        o312.gil_model = PY_GIL_NONE;
        CHECK(py_gil__region_len(&o312) == 0);
        CHECK(py_gil__holder_is(&o312, region, 12, me) == PY_GIL_UNKNOWN);
}

int main(void)
{
        test_table_sized();
        test_table_log2();
        test_long();
        test_gil();
        return 0;
}
