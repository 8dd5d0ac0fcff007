/* py_dict.h — Python dicts and instance attributes read out of another
 * process, bounded and read-only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_offsets.h"

#define PY_DICT_MAX_ENTRIES 16384 /* entries visited per dict */
#define PY_DICT_KEY_MAX     64    /* longest key py_dict__find compares */
#define PY_DICT_HEADER_MAX  48    /* bytes of a keys object's header */

/* Where the entries of one keys object are. */
struct py_dict_table {
        uint64_t entries; /* target address of entry 0 */
        size_t n;         /* entries to visit (dk_nentries, capped) */
        size_t entry_size;
        size_t key_at, value_at; /* within an entry */
};

/* Pure: locates the entries of the keys object at `keys` from a copy of
 * its header (`len` bytes).  False when the header is implausible. */
bool py_dict__table(const struct py_offsets *offsets, uint64_t keys, const uint8_t *header,
                    size_t len, struct py_dict_table *out);

/* Returns false to stop the walk. */
typedef bool (*py_dict_visitor)(void *arg, uint64_t key, uint64_t value);

/* Calls `visit` for each live entry of the dict object at `dict`, in
 * insertion order, at most PY_DICT_MAX_ENTRIES.  0, or -EFAULT when the
 * dict cannot be read. */
int py_dict__visit(pid_t pid, const struct py_offsets *offsets, uint64_t dict,
                   py_dict_visitor visit, void *arg);

/* The value under the ASCII str key `name` in the dict at `dict`; 0 when
 * absent or unreadable.  One small read per key compared. */
uint64_t py_dict__find(pid_t pid, const struct py_offsets *offsets, uint64_t dict,
                       const char *name);

/* The attribute `name` of the object at `object` as its instance dict or
 * managed values hold it (not class attributes); 0 when none. */
uint64_t py_dict__instance_attribute(pid_t pid, const struct py_offsets *offsets, uint64_t object,
                                     const char *name);
