/* py_long.c — a Python int as a uint64_t.
 *
 * Why: threading._active is keyed by thread ident, an int object.
 *
 * How: the magnitude is an array of 30-bit digits at offset 24, least
 * significant first (3.9–3.15).  The digit count and sign are ob_size
 * (signed, 3.9–3.11) or, from 3.12, lv_tag: digits << 3 | sign, sign 0
 * positive, 1 zero, 2 negative.  A thread ident (pthread_t) needs at most
 * three digits; more, or bits beyond 64, is refused. */
#include "python/py_long.h"

#include <string.h>

#define LONG_SIZE_AT   16
#define LONG_DIGITS_AT 24
#define DIGIT_BITS     30
#define DIGITS_MAX     3

static bool digit_count(const struct py_offsets *o, const uint8_t *object, size_t *n)
{
        int64_t size;
        uint64_t tag;

        if (!o->long_tagged) {
                memcpy(&size, object + LONG_SIZE_AT, sizeof(size));
                if (size < 0)
                        return false;
                *n = (size_t)size;
                return true;
        }
        memcpy(&tag, object + LONG_SIZE_AT, sizeof(tag));
        if ((tag & 3) == 2 || (tag & 3) == 3)
                return false;
        *n = (tag & 3) == 1 ? 0 : (size_t)(tag >> 3);
        return true;
}

bool py_long__decode(const struct py_offsets *o, const uint8_t *object, size_t len, uint64_t *out)
{
        uint64_t value = 0;
        size_t n;

        if (len < LONG_DIGITS_AT || !digit_count(o, object, &n) || n > DIGITS_MAX ||
            LONG_DIGITS_AT + 4 * n > len)
                return false;
        for (size_t i = n; i-- > 0;) {
                uint32_t digit;
                memcpy(&digit, object + LONG_DIGITS_AT + 4 * i, sizeof(digit));
                if (digit >> DIGIT_BITS || (value >> (64 - DIGIT_BITS)) != 0)
                        return false;
                value = value << DIGIT_BITS | digit;
        }
        *out = value;
        return true;
}
