/* base64.h — RFC 4648 base64, standard alphabet, '=' padding, no line
 * breaks: the encoding of a Splunk profiling record's body. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Bytes needed for the encoding of `len` bytes, NUL included. */
size_t base64__encoded_size(size_t len);

/* Writes the encoding of `in` and a NUL to `out` (base64__encoded_size
 * bytes); returns the length without the NUL. */
size_t base64__encode(const uint8_t *in, size_t len, char *out);
