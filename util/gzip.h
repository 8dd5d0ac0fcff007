/* gzip.h — gzip (RFC 1952) compression of an in-memory buffer via zlib. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Compresses `in` into a malloc'd gzip member.  0 or -errno. */
int gzip__compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len);
