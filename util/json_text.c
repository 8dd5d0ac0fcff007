/* json_text.c — see json_text.h.  Strings from the target (function and
 * file names) are untrusted: anything that is not well-formed UTF-8 is
 * replaced, never copied into the document as is. */
#include "util/json_text.h"

#include <stdint.h>

size_t json_text__utf8_length(const unsigned char *s)
{
        size_t n;

        if (s[0] < 0x80)
                return 1;
        n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;

        if (s[0] >= 0xf5)
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        return n;
}

void json_text__string(FILE *out, const char *text)
{
        const unsigned char *s = (const unsigned char *)(text ? text : "");

        fputc('"', out);
        while (*s) {
                if (*s == '"' || *s == '\\') {
                        fputc('\\', out);
                        fputc(*s++, out);
                } else if (*s < 0x20) {
                        fprintf(out, "\\u%04x", *s++);
                } else if (*s < 0x80) {
                        fputc(*s++, out);
                } else {
                        size_t n = json_text__utf8_length(s);
                        if (n == 0) {
                                fputs("\\ufffd", out);
                                s++;
                        } else {
                                fwrite(s, 1, n, out);
                                s += n;
                        }
                }
        }
        fputc('"', out);
}
