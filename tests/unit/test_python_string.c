/* test_python_string.c — decoding copies of CPython str objects.
 *
 * Objects are laid out by hand as CPython 3.12+ (and 3.11) lay them out:
 * PyASCIIObject (length at 16, state at 32; 40 bytes in 3.12+, 48 before)
 * followed by the characters of a compact ASCII string, or
 * PyCompactUnicodeObject (56 / 72 bytes) followed by 1-, 2- or 4-byte code
 * points.  State bits from bit 0: interned:2, kind:3, compact:1, ascii:1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "python/py_offsets.h"
#include "python/py_string.h"
#include "tests/unit/check.h"

#define KIND(k)  ((uint32_t)(k) << 2)
#define COMPACT  (1u << 5)
#define ASCII    (1u << 6)
#define OBJ_SIZE 512

static size_t make(uint8_t *obj, const struct py_offsets *o, uint32_t state, int64_t length,
                   const void *chars, size_t chars_len)
{
        size_t data = (state & ASCII) ? o->unicode_ascii_size : o->unicode_compact_size;

        memset(obj, 0xaa, OBJ_SIZE);
        memcpy(obj + o->unicode_length, &length, sizeof(length));
        memcpy(obj + o->unicode_state, &state, sizeof(state));
        memcpy(obj + data, chars, chars_len);
        return data + chars_len;
}

static void test_kinds(unsigned int minor)
{
        struct py_offsets o;
        uint8_t obj[OBJ_SIZE];
        char out[64];
        size_t len;

        CHECK(py_offsets__for_minor(minor, &o));
        len = make(obj, &o, COMPACT | ASCII | KIND(1), 5, "hello", 5);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == 5);
        CHECK(strcmp(out, "hello") == 0);

        /* latin-1 (kind 1, not ASCII): é = U+00E9 -> c3 a9 */
        len = make(obj, &o, COMPACT | KIND(1), 4, "caf\xe9", 4);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == 5);
        CHECK(strcmp(out, "caf\xc3\xa9") == 0);

        /* UCS-2: U+65E5 U+672C -> e6 97 a5 e6 9c ac */
        const uint16_t ucs2[] = {0x65e5, 0x672c};
        len = make(obj, &o, COMPACT | KIND(2), 2, ucs2, sizeof(ucs2));
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == 6);
        CHECK(strcmp(out, "\xe6\x97\xa5\xe6\x9c\xac") == 0);

        /* UCS-4: U+1F600 -> f0 9f 98 80; a lone surrogate -> U+FFFD */
        const uint32_t ucs4[] = {0x1f600, 0xd800, 'x'};
        len = make(obj, &o, COMPACT | KIND(4), 3, ucs4, sizeof(ucs4));
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == 8);
        CHECK(strcmp(out, "\xf0\x9f\x98\x80\xef\xbf\xbdx") == 0);

        /* Truncation never splits a character: 4 bytes of room + NUL. */
        len = make(obj, &o, COMPACT | KIND(2), 2, ucs2, sizeof(ucs2));
        CHECK(py_string__decode(obj, len, &o, out, 5) == 3);
        CHECK(strcmp(out, "\xe6\x97\xa5") == 0);

        /* A length beyond the bytes read: what was read. */
        len = make(obj, &o, COMPACT | ASCII | KIND(1), 1000000, "abc", 3);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == 3);
        CHECK(strcmp(out, "abc") == 0);

        /* Garbage: not compact, bad kind, negative length, ASCII with a
         * high byte, ASCII flag with kind 2, too short a copy. */
        len = make(obj, &o, KIND(1), 3, "abc", 3);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == -EINVAL && out[0] == '\0');
        len = make(obj, &o, COMPACT | KIND(3), 3, "abc", 3);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == -EINVAL);
        len = make(obj, &o, COMPACT | ASCII | KIND(1), -4, "abc", 3);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == -EINVAL);
        len = make(obj, &o, COMPACT | ASCII | KIND(1), 2, "a\xff", 2);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == 4);
        CHECK(strcmp(out, "a\xef\xbf\xbd") == 0);
        len = make(obj, &o, COMPACT | ASCII | KIND(2), 1, "ab", 2);
        CHECK(py_string__decode(obj, len, &o, out, sizeof(out)) == -EINVAL);
        CHECK(py_string__decode(obj, 20, &o, out, sizeof(out)) == -EINVAL);
}

static void test_cap(void)
{
        struct py_offsets o;
        static uint8_t obj[64 + 4 * PY_STRING_MAX_CHARS + 64];
        static char chars[sizeof(obj)];
        static char out[4 * PY_STRING_MAX_CHARS + 1];
        int64_t length = sizeof(chars);
        uint32_t state = COMPACT | ASCII | KIND(1);

        CHECK(py_offsets__for_minor(12, &o));
        memset(chars, 'a', sizeof(chars));
        memcpy(obj + o.unicode_length, &length, sizeof(length));
        memcpy(obj + o.unicode_state, &state, sizeof(state));
        memcpy(obj + o.unicode_ascii_size, chars, sizeof(obj) - o.unicode_ascii_size);
        CHECK(py_string__decode(obj, sizeof(obj), &o, out, sizeof(out)) == PY_STRING_MAX_CHARS);
}

int main(void)
{
        test_kinds(9);
        test_kinds(11);
        test_kinds(12);
        test_cap();
        printf("ok\n");
        return 0;
}
