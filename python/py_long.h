/* py_long.h — small Python int objects read out of another process. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/py_offsets.h"

#define PY_LONG_READ_MAX 56 /* header and up to 3 digits, free-threaded header */

/* Decodes a non-negative int of at most 64 bits from `object[0..len)`, a
 * copy of its first bytes.  False for negative, oversized or malformed
 * objects. */
bool py_long__decode(const struct py_offsets *offsets, const uint8_t *object, size_t len,
                     uint64_t *out);

/* How many bytes of an int to copy for py_long__decode: the header and
 * three digits, 40 bytes (56 on free-threaded builds). */
size_t py_long__read_size(const struct py_offsets *offsets);
