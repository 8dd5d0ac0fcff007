/* py_long.c — a Python int as a uint64_t.
 *
 * Why: threading._active is keyed by thread ident, an int object.
 *
 * How: the magnitude is an array of 30-bit digits at offset 24, least
 * significant first (3.9–3.15).  The digit count and sign are ob_size
 * (signed, 3.9–3.11) or, from 3.12, lv_tag: digits << 3 | sign, sign 0
 * positive, 1 zero, 2 negative.  A thread ident (pthread_t) needs at most
 * three digits; more, or bits beyond 64, is refused.  Free-threaded
 * builds' larger object header moves both by object_extra. */
#include "python/py_long.h"

#include <string.h>

#define LONG_SIZE_AT   16
#define LONG_DIGITS_AT 24
#define DIGIT_BITS     30
#define DIGITS_MAX     3

size_t py_long__read_size(const struct py_offsets *o)
{
        return LONG_DIGITS_AT + 4 * DIGITS_MAX + 4 + o->object_extra;
}

static bool digit_count(const struct py_offsets *o, const uint8_t *object, size_t *n)
{
        int64_t size;
        uint64_t tag;

        if (!o->long_tagged) {
                memcpy(&size, object + LONG_SIZE_AT + o->object_extra, sizeof(size));
                if (size < 0)
                        return false;
                *n = (size_t)size;
                return true;
        }
        memcpy(&tag, object + LONG_SIZE_AT + o->object_extra, sizeof(tag));
        if ((tag & 3) == 2 || (tag & 3) == 3)
                return false;
        *n = (tag & 3) == 1 ? 0 : (size_t)(tag >> 3);
        return true;
}

bool py_long__decode(const struct py_offsets *o, const uint8_t *object, size_t len, uint64_t *out)
{
        uint64_t value = 0, digits_at = LONG_DIGITS_AT + o->object_extra;
        size_t n;

        if (len < digits_at || !digit_count(o, object, &n) || n > DIGITS_MAX ||
            digits_at + 4 * n > len)
                return false;
        for (size_t i = n; i-- > 0;) {
                uint32_t digit;
                memcpy(&digit, object + digits_at + 4 * i, sizeof(digit));
                if (digit >> DIGIT_BITS || (value >> (64 - DIGIT_BITS)) != 0)
                        return false;
                value = value << DIGIT_BITS | digit;
        }
        *out = value;
        return true;
}
