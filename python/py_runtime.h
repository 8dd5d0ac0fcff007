/* py_runtime.h — CPython inside one target process: which binary, and
 * where its _PyRuntime is in this process. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_binary.h"
#include "python/py_offsets.h"

struct address_space;

/* Per process; the per-binary part is shared (py_binary.h). */
struct py_runtime {
        struct py_binary *binary;         /* one user held; version and layout */
        const struct py_offsets *offsets; /* &binary->offsets */
        uint64_t bias;                    /* the interpreter file's load bias here */
        uint64_t runtime_address;         /* &_PyRuntime in the target */
        uint64_t code_type;               /* &PyCode_Type, 0 when unknown */
        uint64_t none_object;             /* &_Py_NoneStruct, 0 when unknown */
        uint64_t start, limit;            /* the interpreter file's mappings */
};

/* Looks for CPython in `pid` (the executable or a libpython3.X.so).  Never
 * runs the target's binary.  A binary already in `binaries` under the file
 * key `space` gives for it is not read again; a new one is added there.
 * `space` and `binaries` may be NULL: the binary is then read and kept
 * private.  On failure `why` holds one line; on success release `out`
 * with py_runtime__clear(). */
enum py_discovery py_runtime__discover(pid_t pid, struct address_space *space,
                                       struct py_binaries *binaries, struct py_runtime *out,
                                       char *why, size_t why_size);
void py_runtime__clear(struct py_runtime *runtime);

/* Reads the first interpreter's address; 0 when unreadable. */
uint64_t py_runtime__first_interpreter(pid_t pid, const struct py_runtime *runtime);

/* sys.modules[name] of the first interpreter (interp->modules), and that
 * module's md_dict; 0 when unreadable or not imported.  Untrusted: every
 * read is bounded by py_dict. */
uint64_t py_runtime__module(pid_t pid, const struct py_runtime *runtime, const char *name);
uint64_t py_runtime__module_dict(pid_t pid, const struct py_runtime *runtime, const char *name);
