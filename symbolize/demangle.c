/* demangle.c — C++ names through the C++ runtime's own demangler.
 *
 * Profiles of C++ programs are unreadable with raw "_ZN..." names.  Rather
 * than carrying a demangler, we call __cxa_demangle from libstdc++ (which the
 * build links), declared here by hand because its header is C++ only.  Only
 * names starting with "_Z" are passed: __cxa_demangle also demangles bare
 * type encodings, which would turn a C function named "f" into "float".
 * Names come from untrusted binaries, so their length is capped before the
 * (recursive) demangler sees them. */
#include "symbolize/demangle.h"

#include <stdlib.h>
#include <string.h>

#define DEMANGLE_MAX_INPUT 4096

char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

char *cxx_name__demangle(const char *name)
{
        int status = -1;
        char *out;

        if (!name || strncmp(name, "_Z", 2) != 0)
                return NULL;
        if (strnlen(name, DEMANGLE_MAX_INPUT + 1) > DEMANGLE_MAX_INPUT)
                return NULL;
        out = __cxa_demangle(name, NULL, NULL, &status);
        if (status != 0) {
                free(out);
                return NULL;
        }
        return out;
}
