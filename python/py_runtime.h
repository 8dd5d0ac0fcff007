/* py_runtime.h — finding CPython inside a target process. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_offsets.h"

#define PY_RUNTIME_PATH_MAX 4096

struct py_runtime {
        uint64_t runtime_address; /* &_PyRuntime in the target */
        uint32_t version_hex;     /* PY_VERSION_HEX, 0 when only the minor is known */
        unsigned int minor;
        struct py_offsets offsets;
        char path[PY_RUNTIME_PATH_MAX]; /* the interpreter's file, as in /proc/PID/maps */
        uint64_t code_type;             /* &PyCode_Type, 0 when unknown */
        uint64_t none_object;           /* &_Py_NoneStruct, 0 when unknown */
};

enum py_discovery {
        PY_DISCOVERY_FOUND,
        PY_DISCOVERY_NOT_PYTHON,  /* no CPython runtime in the process */
        PY_DISCOVERY_UNSUPPORTED, /* CPython, but a version or build we cannot read */
};

/* Looks for CPython in `pid` (the executable or a libpython3.X.so, files
 * opened through /proc/PID/map_files or /proc/PID/root).  Never runs the
 * target's binary.  On failure `why` holds one line. */
enum py_discovery py_runtime__discover(pid_t pid, struct py_runtime *out, char *why,
                                       size_t why_size);

/* Reads the first interpreter's address; 0 when unreadable. */
uint64_t py_runtime__first_interpreter(pid_t pid, const struct py_runtime *runtime);

/* Parses the minor version out of a file name such as "python3.11",
 * "libpython3.9.so.1.0" or "libpython3.12d.so"; 0 when none. */
unsigned int py_runtime__minor_from_name(const char *path);
