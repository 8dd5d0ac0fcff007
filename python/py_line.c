/* py_line.c — line numbers from CPython's line tables.
 *
 * Why: a frame only records where its bytecode is; the line comes from a
 * compressed table in the code object, in a format that changed twice.
 *
 * How (the formats, from CPython's own notes):
 *   3.9  co_lnotab (Objects/lnotab_notes.txt): pairs (address increment in
 *        bytes: u8, line increment: s8).  Start at address 0 and
 *        co_firstlineno; add each address increment, stop as soon as the
 *        address passes the instruction, else add the line increment.
 *   3.10 co_linetable: pairs (range length in bytes: u8, line delta: s8),
 *        the ranges laid end to end from 0.  A delta of -128 means the
 *        range has no line (and the running line is not changed).
 *   3.11+ location table (InternalDocs/code_objects.md): entries whose
 *        first byte is 1|code:4|length-1:3 (length in code units), then
 *        code 0-9: one column byte, line delta 0; 10-12: two column bytes,
 *        delta code-10; 13: svarint delta; 14: svarint delta and three
 *        varints (end line, column, end column); 15: no location (line
 *        -1, running line unchanged).  varints are 6-bit groups, least
 *        significant first, bit 6 = continue; an svarint keeps its sign in
 *        bit 0.
 * Every read is checked against the table length, every loop is bounded
 * by it, and a truncated or corrupt table gives PY_LINE_UNKNOWN. */
#include "python/py_line.h"

#include <stdbool.h>

int py_line__lnotab(const uint8_t *table, size_t len, int first_line, int64_t byte_offset)
{
        int64_t address = 0;
        int line = first_line;

        if (byte_offset < 0)
                return first_line;
        for (size_t i = 0; i + 1 < len; i += 2) {
                address += table[i];
                if (address > byte_offset)
                        return line;
                line += (int8_t)table[i + 1];
        }
        return line;
}

int py_line__linetable_310(const uint8_t *table, size_t len, int first_line, int64_t byte_offset)
{
        int64_t start, end = 0;
        int line = first_line;

        if (byte_offset < 0)
                return first_line;
        for (size_t i = 0; i + 1 < len; i += 2) {
                int8_t delta = (int8_t)table[i + 1];
                start = end;
                end = start + table[i];
                if (delta != -128)
                        line += delta;
                if (byte_offset >= start && byte_offset < end)
                        return delta == -128 ? PY_LINE_UNKNOWN : line;
        }
        return PY_LINE_UNKNOWN;
}

struct cursor {
        const uint8_t *table;
        size_t len, pos;
        bool bad;
};

static uint64_t read_varint(struct cursor *c)
{
        uint64_t value = 0;
        unsigned int shift = 0;
        uint8_t b;

        do {
                if (c->pos >= c->len || shift > 56) {
                        c->bad = true;
                        return 0;
                }
                b = c->table[c->pos++];
                value |= (uint64_t)(b & 63) << shift;
                shift += 6;
        } while (b & 64);
        return value;
}

static int64_t read_svarint(struct cursor *c)
{
        uint64_t u = read_varint(c);

        return (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

static void skip(struct cursor *c, size_t n)
{
        if (c->len - c->pos < n)
                c->bad = true;
        else
                c->pos += n;
}

/* Consumes one entry's payload; returns its line delta, or sets *none for
 * code 15. */
static int64_t entry_delta(struct cursor *c, unsigned int code, bool *none)
{
        int64_t delta;

        *none = false;
        if (code <= 9) {
                skip(c, 1);
                return 0;
        }
        if (code <= 12) {
                skip(c, 2);
                return code - 10;
        }
        if (code == 13)
                return read_svarint(c);
        if (code == 14) {
                delta = read_svarint(c);
                (void)read_varint(c); /* end line */
                (void)read_varint(c); /* column */
                (void)read_varint(c); /* end column */
                return delta;
        }
        *none = true;
        return 0;
}

int py_line__locations(const uint8_t *table, size_t len, int first_line, int64_t unit)
{
        struct cursor c = {.table = table, .len = len};
        int64_t line = first_line, start = 0;

        if (unit < 0)
                return first_line;
        while (c.pos < c.len) {
                uint8_t first = c.table[c.pos++];
                bool none;
                if (!(first & 0x80))
                        return PY_LINE_UNKNOWN; /* not at an entry start: corrupt */
                unsigned int code = (first >> 3) & 15;
                int64_t end = start + (first & 7) + 1;
                line += entry_delta(&c, code, &none);
                if (c.bad)
                        return PY_LINE_UNKNOWN;
                if (unit >= start && unit < end)
                        return none || line < 0 || line > INT32_MAX ? PY_LINE_UNKNOWN : (int)line;
                start = end;
        }
        return PY_LINE_UNKNOWN;
}
