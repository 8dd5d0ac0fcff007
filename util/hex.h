/* hex.h — bytes as lowercase hex, and the all-zero test, for ids read from
 * targets (trace and span ids, build-ids): one copy of each for every
 * reader. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes 2 * n digits and a NUL into `out` (2 * n + 1 bytes). */
void hex__encode(char *out, const uint8_t *bytes, size_t n);
/* True when every one of the n bytes is 0 (an id that is not set). */
bool hex__all_zero(const uint8_t *bytes, size_t n);
