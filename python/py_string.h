/* py_string.h — Python str objects read out of another process. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_offsets.h"

#define PY_STRING_MAX_CHARS 1024 /* longer names and paths are truncated */
#define PY_STRING_READ_MAX  (128 + 4 * PY_STRING_MAX_CHARS)

/* Decodes a str object from `object[0..len)`, a copy of its first bytes,
 * into NUL-terminated UTF-8 in `out` (truncated to fit, never splitting a
 * character).  Handles compact strings: ASCII, and latin-1/UCS-2/UCS-4.
 * Returns the number of bytes written, or -EINVAL when the object does not
 * look like a compact str (then `out` is ""). */
int py_string__decode(const uint8_t *object, size_t len, const struct py_offsets *offsets,
                      char *out, size_t out_size);

/* Whether `object[0..len)` holds every character of the compact str it
 * starts: a copy made in a stop window then decodes whole, not cut short. */
bool py_string__complete(const uint8_t *object, size_t len, const struct py_offsets *offsets);

/* Reads the str at `address` in `pid` (one bounded read) and decodes it.
 * Returns as py_string__decode, or -EFAULT when the memory is unreadable. */
int py_string__read(pid_t pid, uint64_t address, const struct py_offsets *offsets, char *out,
                    size_t out_size);
