/* py_line.h — instruction offset -> source line, for the three formats
 * CPython 3.9–3.15 use.  Pure functions over a local copy of the table. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PY_LINE_UNKNOWN (-1)

/* 3.9 co_lnotab; `byte_offset` = f_lasti (bytes). */
int py_line__lnotab(const uint8_t *table, size_t len, int first_line, int64_t byte_offset);

/* 3.10 co_linetable; `byte_offset` = 2 * f_lasti. */
int py_line__linetable_310(const uint8_t *table, size_t len, int first_line, int64_t byte_offset);

/* 3.11+ location table (co_linetable); `unit` = instruction index in
 * 2-byte code units from the start of the bytecode. */
int py_line__locations(const uint8_t *table, size_t len, int first_line, int64_t unit);
