/* hex.c — see hex.h. */
#include "util/hex.h"

void hex__encode(char *out, const uint8_t *bytes, size_t n)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[bytes[i] >> 4];
                out[2 * i + 1] = digits[bytes[i] & 15];
        }
        out[2 * n] = '\0';
}

bool hex__all_zero(const uint8_t *bytes, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (bytes[i])
                        return false;
        return true;
}
