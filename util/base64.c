/* base64.c — see base64.h.  Three input bytes become four output
 * characters; a final group of one or two bytes is padded with '='. */
#include "util/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64__encoded_size(size_t len)
{
        return (len + 2) / 3 * 4 + 1;
}

size_t base64__encode(const uint8_t *in, size_t len, char *out)
{
        size_t i = 0, o = 0;

        for (; i + 3 <= len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
                out[o++] = alphabet[v >> 18];
                out[o++] = alphabet[(v >> 12) & 63];
                out[o++] = alphabet[(v >> 6) & 63];
                out[o++] = alphabet[v & 63];
        }
        if (i < len) {
                uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
                out[o++] = alphabet[v >> 18];
                out[o++] = alphabet[(v >> 12) & 63];
                out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
                out[o++] = '=';
        }
        out[o] = '\0';
        return o;
}
