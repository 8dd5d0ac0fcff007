/* source_path.c — making DWARF file names absolute and tidy.
 *
 * Build systems like meson compile with paths relative to the build
 * directory, and DWARF 5 line tables then hold names like
 * "../../src/tests/x.c" whose meaning depends on DW_AT_comp_dir (libdw
 * joins only directory entry 0 with it).  A profile viewer cannot resolve
 * that, and the same file would appear under different spellings from
 * different build directories.  So relative names are joined with the
 * compilation directory, and "." / ".." / "//" are folded lexically (no
 * filesystem access: the files are usually not on this machine). */
#include "symbolize/source_path.h"

#include <stdio.h>
#include <string.h>

#define SOURCE_PATH_MAX (2 * STRING_POOL_MAX_LEN + 2)

/* Removes the last component of out[0..*len), never past the root. */
static bool component__pop(char *out, size_t *len, bool absolute)
{
        size_t l = *len;

        while (l > 0 && out[l - 1] != '/')
                l--;
        if (l == *len - 2 && memcmp(out + l, "..", 2) == 0)
                return false; /* "../..": nothing left to fold */
        if (*len == 0 || (absolute && *len == 1))
                return absolute;
        *len = l > 1 ? l - 1 : l;
        return true;
}

static void component__push(char *out, size_t *len, const char *c, size_t n)
{
        if (*len > 0 && out[*len - 1] != '/')
                out[(*len)++] = '/';
        memcpy(out + *len, c, n);
        *len += n;
}

/* Normalizes in[] into out[] (at least strlen(in) + 1 bytes). */
static void path__normalize(const char *in, char *out)
{
        bool absolute = in[0] == '/';
        size_t len = absolute ? 1 : 0;
        const char *p = in;

        out[0] = '/';
        while (*p) {
                size_t n = strcspn(p, "/");

                if (n == 2 && memcmp(p, "..", 2) == 0) {
                        if (!component__pop(out, &len, absolute))
                                component__push(out, &len, p, n);
                } else if (n > 0 && !(n == 1 && p[0] == '.')) {
                        component__push(out, &len, p, n);
                }
                p += n;
                while (*p == '/')
                        p++;
        }
        if (len == 0)
                out[len++] = '.';
        out[len] = '\0';
}

const char *source_path__intern(struct string_pool *strings, const char *comp_dir, const char *file)
{
        char joined[SOURCE_PATH_MAX], normal[SOURCE_PATH_MAX];
        const char *s;
        int n;

        if (!file || !file[0])
                return "";
        if (file[0] != '/' && comp_dir && comp_dir[0] == '/')
                n = snprintf(joined, sizeof(joined), "%s/%s", comp_dir, file);
        else
                n = snprintf(joined, sizeof(joined), "%s", file);
        if (n < 0 || (size_t)n >= sizeof(joined)) {
                s = string_pool__intern(strings, file);
        } else {
                path__normalize(joined, normal);
                s = string_pool__intern(strings, normal);
        }
        return s ? s : "";
}
