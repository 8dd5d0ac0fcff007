/* proc_maps.c — the target's memory layout, from /proc/PID/maps.
 *
 * The address space needs to know which file is mapped where and at which
 * file offset, to report ELF modules and to answer "which mapping holds this
 * address".  The text comes from the kernel, but its paths are chosen by the
 * target (any byte but '\n', which the kernel escapes), so parsing is
 * defensive: lines, paths and the number of mappings are capped, fields are
 * parsed by hand with overflow checks, and a malformed line is skipped
 * rather than trusted.  The parse keeps its own NUL-separated copy of the
 * text so that paths can point into it without one allocation each. */
#include "symbolize/proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/array.h"
#include "util/cleanup.h"
#include "util/log.h"

static int proc_maps__grow(char **buf, size_t *cap)
{
        size_t new_cap = *cap ? *cap * 2 : 16384;
        char *p;

        if (new_cap > PROC_MAPS_MAX_TEXT)
                new_cap = PROC_MAPS_MAX_TEXT;
        p = realloc(*buf, new_cap);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *cap = new_cap;
        return 0;
}

int proc_maps__read(pid_t pid, char **text, size_t *len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t cap = 0, used = 0;
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n;

                if (used == cap) {
                        if (cap == PROC_MAPS_MAX_TEXT) {
                                log_warning("%s larger than %u bytes, truncated", path,
                                            PROC_MAPS_MAX_TEXT);
                                break;
                        }
                        if (proc_maps__grow(&buf, &cap) < 0)
                                return -ENOMEM;
                }
                n = read(fd, buf + used, cap - used);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                used += (size_t)n;
        }
        *text = take_ptr(buf);
        *len = used;
        return 0;
}

FILE *proc_maps__open(pid_t pid, const char *text, size_t len)
{
        char path[64];

        if (text && len > 0)
                return fmemopen((void *)text, len, "r");
        snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
        return fopen(path, "re");
}

/* Parses a hex number ending at a non-hex character; advances *p. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
        const char *s = *p;
        uint64_t v = 0;

        for (; s < end; s++) {
                int d;

                if (*s >= '0' && *s <= '9')
                        d = *s - '0';
                else if (*s >= 'a' && *s <= 'f')
                        d = *s - 'a' + 10;
                else if (*s >= 'A' && *s <= 'F')
                        d = *s - 'A' + 10;
                else
                        break;
                if (v >> 60)
                        return false;
                v = v << 4 | (uint64_t)d;
        }
        if (s == *p)
                return false;
        *p = s;
        *out = v;
        return true;
}

static bool parse_dec(const char **p, const char *end, uint64_t *out)
{
        const char *s = *p;
        uint64_t v = 0;

        for (; s < end && *s >= '0' && *s <= '9'; s++) {
                if (__builtin_mul_overflow(v, 10, &v) ||
                    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
                        return false;
        }
        if (s == *p)
                return false;
        *p = s;
        *out = v;
        return true;
}

static bool expect_char(const char **p, const char *end, char c)
{
        if (*p >= end || **p != c)
                return false;
        (*p)++;
        return true;
}

static void skip_spaces(const char **p, const char *end)
{
        while (*p < end && **p == ' ')
                (*p)++;
}

/* "start-limit perms offset major:minor inode" */
static bool parse_fields(const char **p, const char *end, struct proc_map *m)
{
        uint64_t major, minor;

        if (!parse_hex(p, end, &m->start) || !expect_char(p, end, '-') ||
            !parse_hex(p, end, &m->limit) || !expect_char(p, end, ' '))
                return false;
        if (end - *p < 5 || (*p)[4] != ' ')
                return false;
        m->executable = (*p)[2] == 'x';
        *p += 5;
        if (!parse_hex(p, end, &m->offset) || !expect_char(p, end, ' ') ||
            !parse_hex(p, end, &major) || !expect_char(p, end, ':') || !parse_hex(p, end, &minor) ||
            !expect_char(p, end, ' ') || !parse_dec(p, end, &m->inode))
                return false;
        if (major > 0xfff || minor > 0xfffff || m->start >= m->limit)
                return false;
        m->dev_major = (unsigned int)major;
        m->dev_minor = (unsigned int)minor;
        return true;
}

/* Parses one line, NUL-terminated in place (path included). */
static bool parse_line(char *line, size_t len, struct proc_map *m)
{
        const char *p = line, *end = line + len;
        size_t path_len, mark_len = strlen(PROC_MAPS_DELETED_MARK);

        *m = (struct proc_map){.path = ""};
        if (!parse_fields(&p, end, m))
                return false;
        skip_spaces(&p, end);
        path_len = (size_t)(end - p);
        if (path_len > PROC_MAPS_MAX_PATH)
                return false;
        if (path_len > mark_len && memcmp(end - mark_len, PROC_MAPS_DELETED_MARK, mark_len) == 0) {
                m->deleted = true;
                path_len -= mark_len;
        }
        line[p - line + path_len] = '\0';
        m->path = p;
        return true;
}

static int proc_maps__append(struct proc_maps *out, size_t *cap, const struct proc_map *m)
{
        if (ARRAY_RESERVE(out->maps, *cap, out->n + 1) < 0)
                return -ENOMEM;
        out->maps[out->n++] = *m;
        return 0;
}

int proc_maps__parse(const char *text, size_t len, struct proc_maps *out)
{
        size_t cap = 0, pos = 0;

        *out = (struct proc_maps){0};
        out->text = malloc(len + 1);
        if (!out->text)
                return -ENOMEM;
        memcpy(out->text, text, len);
        out->text[len] = '\0';
        while (pos < len && out->n < PROC_MAPS_MAX_ENTRIES) {
                char *line = out->text + pos, *nl = memchr(line, '\n', len - pos);
                size_t line_len = nl ? (size_t)(nl - line) : len - pos;
                struct proc_map m;

                pos += line_len + 1;
                if (line_len > PROC_MAPS_MAX_LINE || !parse_line(line, line_len, &m))
                        continue;
                if (proc_maps__append(out, &cap, &m) < 0) {
                        proc_maps__clear(out);
                        return -ENOMEM;
                }
        }
        if (pos < len)
                log_warning("more than %d mappings, the rest is ignored", PROC_MAPS_MAX_ENTRIES);
        return 0;
}

void proc_maps__clear(struct proc_maps *maps)
{
        free(maps->maps);
        free(maps->text);
        *maps = (struct proc_maps){0};
}
