/* py_binary.h — what is read once per distinct CPython binary (the python
 * executable or a libpython3.X.so), shared by every process running it:
 * version, layout, and the file addresses of the symbols we need.
 *
 * A fleet of gunicorn workers runs one binary; its symbol table, version
 * and offsets are the same in each, only the load bias differs.  So they
 * are kept per file, keyed by the symbolizer's file key (GNU build-id, else
 * dev+inode+mtime+size: address_space__file_key), in a `struct py_binaries`
 * owned by the run (no global), and referenced by each py_process. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_offsets.h"
#include "symbolize/proc_maps.h"
#include "util/cleanup.h"
#include "util/hashtab.h"

/* Symbols of the interpreter loop (_PyEval_EvalFrameDefault and split
 * parts such as its .cold) whose ranges are kept. */
#define PY_EVAL_RANGES 4

/* [start, end) in file virtual addresses (load bias 0). */
struct py_range {
        uint64_t start, end;
};

struct py_binary {
        struct hash_node node;
        struct py_binaries *owner; /* NULL: private to one process (no file key) */
        char *key;                 /* owned copy of the file key, NULL when private */
        unsigned int users;        /* py_process objects holding it */
        uint32_t version_hex;      /* PY_VERSION_HEX, 0 when only the minor is known */
        unsigned int minor;
        struct py_offsets offsets;
        /* File virtual addresses; add a process's load bias to use them. */
        uint64_t runtime;     /* _PyRuntime */
        uint64_t code_type;   /* PyCode_Type, 0 when unknown */
        uint64_t none_object; /* _Py_NoneStruct, 0 when unknown */
        struct py_range eval[PY_EVAL_RANGES];
        size_t n_eval;
};

/* Binaries refused for their version or build, remembered so that the
 * user is warned once per file, not once per process or retry. */
#define PY_BINARIES_REFUSED 16

/* Every shared py_binary of a run, by file key.  Not thread-safe: the
 * tracer thread owns it, like the symbolizer. */
struct py_binaries {
        struct hashtab tab;
        uint64_t seed;
        uint64_t parsed; /* binaries read from their files so far (tests, -vv) */
        /* File keys and reasons of the last PY_BINARIES_REFUSED binaries
         * refused (owned; NULL: free slot), oldest replaced first. */
        struct {
                char *key, *why;
        } refused[PY_BINARIES_REFUSED];
        size_t next_refused;
};

enum py_discovery {
        PY_DISCOVERY_FOUND,
        PY_DISCOVERY_NOT_PYTHON,  /* no CPython runtime in the process */
        PY_DISCOVERY_UNSUPPORTED, /* CPython, but a version or build we cannot read */
        PY_DISCOVERY_REFUSED,     /* the same, for a file already refused (and warned about) */
};

void py_binaries__init(struct py_binaries *binaries);
/* Call after every py_process is freed; a binary still referenced then is
 * a leak and is freed anyway. */
void py_binaries__clear(struct py_binaries *binaries);

/* The binary with file key `key`, with one more user, or NULL. */
struct py_binary *py_binaries__find(struct py_binaries *binaries, const char *key);

/* Why the file with key `key` was refused (PY_DISCOVERY_UNSUPPORTED by
 * py_binary__read), or NULL when it was not.  Valid until the next read. */
const char *py_binaries__refused(const struct py_binaries *binaries, const char *key);

/* Reads the binary of the file whose consecutive mappings are
 * maps->maps[first .. first + n) in process `pid` (file opened through
 * /proc/PID/map_files or /proc/PID/root, never run), and the version and
 * layout it declares in that process's memory.  On PY_DISCOVERY_FOUND,
 * *out is a new binary with one user, *bias the file's load bias in `pid`,
 * and the binary is shared under `key` when `binaries` and `key` are both
 * non-NULL (else private).  Otherwise `why` holds one line (UNSUPPORTED),
 * and the refusal is remembered under `key` (py_binaries__refused). */
enum py_discovery py_binary__read(struct py_binaries *binaries, const char *key, pid_t pid,
                                  const struct proc_maps *maps, size_t first, size_t n,
                                  struct py_binary **out, uint64_t *bias, char *why,
                                  size_t why_size);

/* Drops one user; the last frees the binary and takes it out of its
 * registry.  NULL is fine. */
void py_binary__unref(struct py_binary *binary);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct py_binary *, py_binary__unref, py_binary__unrefp);

/* Whether `address` in `pid` holds a _PyRuntime of this layout: its first
 * interpreter's first thread state points back at that interpreter. */
bool py_binary__runtime_validates(pid_t pid, uint64_t address, const struct py_offsets *offsets);

/* Parses the minor version out of a file name such as "python3.11",
 * "libpython3.9.so.1.0" or "libpython3.12d.so"; 0 when none. */
unsigned int py_binary__minor_from_name(const char *path);

/* Parses a PY_VERSION string ("3.9.2", "3.10.0rc1", "3.9.2+") of `len`
 * bytes into its PY_VERSION_HEX; 0 when it is not one. */
uint32_t py_binary__parse_version(const char *text, size_t len);
