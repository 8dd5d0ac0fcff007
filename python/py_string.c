/* py_string.c — turning a remote Python str into UTF-8.
 *
 * Why: code object names and file names are str objects, whose characters
 * sit right after a fixed header in one of four widths.  We read header
 * and characters in one bounded process_vm_readv and decode locally.
 *
 * How: PyASCIIObject.state holds, from bit 0, interned:2, kind:3,
 * compact:1, ascii:1 (the same bits in 3.9–3.15 GIL builds).  A compact
 * ASCII string keeps its bytes after PyASCIIObject; any other compact
 * string keeps its code points after PyCompactUnicodeObject, 1, 2 or 4
 * bytes each (kind).  Non-compact ("legacy") strings never name code and
 * are refused.  Lengths come from the target, so everything is capped at
 * PY_STRING_MAX_CHARS and at the bytes actually read, and invalid code
 * points become U+FFFD instead of invalid UTF-8. */
#include "python/py_string.h"

#include <errno.h>
#include <string.h>

#include "attach/remote_memory.h"

#define STATE_KIND_SHIFT 2
#define STATE_KIND_MASK  7u
#define STATE_COMPACT    (1u << 5)
#define STATE_ASCII      (1u << 6)
#define REPLACEMENT_CHAR 0xfffdu

static size_t utf8_length(uint32_t cp)
{
        return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

static size_t utf8_encode(uint32_t cp, char *out)
{
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}

static uint32_t code_point(const uint8_t *data, unsigned int kind, size_t i)
{
        uint16_t u16;
        uint32_t u32;

        if (kind == 1)
                return data[i];
        if (kind == 2) {
                memcpy(&u16, data + 2 * i, sizeof(u16));
                return u16;
        }
        memcpy(&u32, data + 4 * i, sizeof(u32));
        return u32;
}

static bool valid_code_point(uint32_t cp, bool ascii)
{
        if (ascii)
                return cp < 0x80 && cp != 0;
        return cp != 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
}

int py_string__decode(const uint8_t *object, size_t len, const struct py_offsets *offsets,
                      char *out, size_t out_size)
{
        int64_t length;
        uint32_t state;
        unsigned int kind;
        size_t data_offset, written = 0;

        if (out_size == 0)
                return -EINVAL;
        out[0] = '\0';
        if (len < offsets->unicode_ascii_size)
                return -EINVAL;
        memcpy(&length, object + offsets->unicode_length, sizeof(length));
        memcpy(&state, object + offsets->unicode_state, sizeof(state));
        kind = (state >> STATE_KIND_SHIFT) & STATE_KIND_MASK;
        if (!(state & STATE_COMPACT) || length < 0 || (kind != 1 && kind != 2 && kind != 4))
                return -EINVAL;
        if ((state & STATE_ASCII) && kind != 1)
                return -EINVAL;
        data_offset =
            (state & STATE_ASCII) ? offsets->unicode_ascii_size : offsets->unicode_compact_size;
        if (data_offset > len)
                return -EINVAL;
        size_t available = (len - data_offset) / kind;
        size_t n = (uint64_t)length < available ? (size_t)length : available;
        if (n > PY_STRING_MAX_CHARS)
                n = PY_STRING_MAX_CHARS;
        for (size_t i = 0; i < n; i++) {
                uint32_t cp = code_point(object + data_offset, kind, i);
                if (!valid_code_point(cp, state & STATE_ASCII))
                        cp = REPLACEMENT_CHAR;
                if (written + utf8_length(cp) + 1 > out_size)
                        break;
                written += utf8_encode(cp, out + written);
        }
        out[written] = '\0';
        return (int)written;
}

bool py_string__complete(const uint8_t *object, size_t len, const struct py_offsets *offsets)
{
        int64_t length;
        uint32_t state;
        unsigned int kind;
        size_t data_offset;

        if (len < offsets->unicode_ascii_size)
                return false;
        memcpy(&length, object + offsets->unicode_length, sizeof(length));
        memcpy(&state, object + offsets->unicode_state, sizeof(state));
        kind = (state >> STATE_KIND_SHIFT) & STATE_KIND_MASK;
        if (!(state & STATE_COMPACT) || length < 0 || (kind != 1 && kind != 2 && kind != 4))
                return false;
        data_offset =
            (state & STATE_ASCII) ? offsets->unicode_ascii_size : offsets->unicode_compact_size;
        return data_offset <= len && (uint64_t)length <= (len - data_offset) / kind;
}

int py_string__read(pid_t pid, uint64_t address, const struct py_offsets *offsets, char *out,
                    size_t out_size)
{
        uint8_t buffer[PY_STRING_READ_MAX];
        ssize_t n;

        if (out_size)
                out[0] = '\0';
        if (address < 4096 || (address & 7))
                return -EINVAL;
        /* Short strings are the rule: read a small head first, and the
         * rest only when the length says there is more. */
        n = remote_memory__read(pid, address, buffer, 256);
        if (n <= 0)
                return -EFAULT;
        int64_t length;
        if ((size_t)n >= offsets->unicode_length + sizeof(length)) {
                memcpy(&length, buffer + offsets->unicode_length, sizeof(length));
                size_t need = offsets->unicode_compact_size + 4 * (size_t)(length > 0 ? length : 0);
                if (length > 0 && need > (size_t)n && n == 256) {
                        if (need > sizeof(buffer))
                                need = sizeof(buffer);
                        ssize_t more =
                            remote_memory__read(pid, address + 256, buffer + 256, need - 256);
                        if (more > 0)
                                n += more;
                }
        }
        return py_string__decode(buffer, (size_t)n, offsets, out, out_size);
}
