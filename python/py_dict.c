/* py_dict.c — walking a dict, and finding an instance's attributes, in
 * another process's memory.
 *
 * Why: the Python thread names live in threading._active, a dict of
 * Thread objects whose `_name` is an instance attribute; getting there
 * takes sys.modules (a dict), a module's dict, and the instance's
 * attribute storage, whose shape changed in 3.11, 3.12 and 3.13.
 *
 * How: a dict object (ma_keys at 32, ma_values at 40 in 3.9–3.15) points
 * to a keys object, a header then an index array then the entries in
 * insertion order.  We never hash (string hashes are seeded per process):
 * entries are walked in bounded chunks, PY_DICT_MAX_ENTRIES at most.
 *   3.9/3.10  header dk_size (8), dk_nentries (32), indices at 40,
 *             dk_size index slots of 1/2/4/8 bytes; 24-byte entries
 *             {hash, key, value}.
 *   3.11+     dk_log2_size (8), dk_log2_index_bytes (9), dk_kind (10),
 *             dk_nentries (24), indices at 32 taking 1 << log2_index_bytes
 *             bytes; kind 0 (general) has 24-byte entries, unicode and
 *             split keys 16-byte {key, value}.
 * A split table (ma_values != NULL) keeps value i in a values array
 * (3.13+: after an 8-byte header whose first byte is the capacity).
 *
 * Instance attributes (py_offsets managed_dict):
 *   3.9/3.10  the dict pointer at object + tp_dictoffset.
 *   3.11      managed types (Py_TPFLAGS_MANAGED_DICT): dict pointer at
 *             object - 24, else a values array at object - 32 whose keys
 *             are the type's ht_cached_keys.
 *   3.12      one word at object - 24: a dict, or values - 1 (odd).
 *   3.13+     dict pointer at object - 24, else (Py_TPFLAGS_INLINE_VALUES)
 *             values right after tp_basicsize, valid when byte 3 is set.
 * Free-threaded builds (3.13t): object fields (dict, type) move by
 * object_extra, keys and values objects do not; the managed dict pointer
 * is at object - 8 (no PyGC_Head in between).
 * Every pointer is checked for alignment, every size capped, and any
 * failed read ends the lookup with "not found". */
#include "python/py_dict.h"

#include <errno.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_string.h"

#define DICT_KEYS_AT          32
#define DICT_VALUES_AT        40
#define TYPE_BASICSIZE_AT     32
#define TYPE_FLAGS_AT         168
#define TYPE_DICTOFFSET_AT    288
#define TPFLAGS_INLINE_VALUES (1ul << 2)
#define TPFLAGS_MANAGED_DICT  (1ul << 4)
#define TPFLAGS_HEAPTYPE      (1ul << 9)
#define MANAGED_DICT_AT       24 /* before the object */
#define MANAGED_DICT_AT_FT    8
#define MANAGED_VALUES_AT_311 32
#define MAX_LOG2_SIZE         26
#define MAX_OBJECT_OFFSET     (1u << 16)
#define CHUNK                 128

struct split_values {
        uint64_t address; /* 0: combined table */
        size_t max;       /* values beyond are unset */
};

static uint64_t u64_at(const uint8_t *data, size_t offset)
{
        uint64_t value;

        memcpy(&value, data + offset, sizeof(value));
        return value;
}

static bool pointer_ok(uint64_t address)
{
        return address >= 4096 && !(address & 7) && address < (1ull << 56);
}

static bool read_u64(pid_t pid, uint64_t address, uint64_t *value)
{
        return remote_memory__read(pid, address, value, sizeof(*value)) == sizeof(*value);
}

static size_t index_bytes(uint64_t size)
{
        return size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffu ? 4 : 8;
}

static bool table_sized(uint64_t keys, const uint8_t *header, struct py_dict_table *out)
{
        uint64_t size = u64_at(header, 8), used = u64_at(header, 32);

        if (size < 8 || size > (1ull << MAX_LOG2_SIZE) || (size & (size - 1)) || used > size)
                return false;
        *out = (struct py_dict_table){
            .entries = keys + 40 + size * index_bytes(size),
            .n = used,
            .entry_size = 24,
            .key_at = 8,
            .value_at = 16,
        };
        return true;
}

static bool table_log2(uint64_t keys, const uint8_t *header, struct py_dict_table *out)
{
        unsigned int log2_size = header[8], log2_index = header[9], kind = header[10];
        uint64_t used = u64_at(header, 24);

        if (log2_size > MAX_LOG2_SIZE || log2_index < log2_size || log2_index > log2_size + 3 ||
            kind > 2 || used > (1ull << log2_size))
                return false;
        *out = (struct py_dict_table){
            .entries = keys + 32 + (1ull << log2_index),
            .n = used,
            .entry_size = kind == 0 ? 24 : 16,
            .key_at = kind == 0 ? 8 : 0,
            .value_at = kind == 0 ? 16 : 8,
        };
        return true;
}

bool py_dict__table(const struct py_offsets *o, uint64_t keys, const uint8_t *header, size_t len,
                    struct py_dict_table *out)
{
        bool ok;

        if (len < 40 || !pointer_ok(keys))
                return false;
        ok = o->dict_model == PY_DICT_SIZED ? table_sized(keys, header, out)
                                            : table_log2(keys, header, out);
        if (ok && out->n > PY_DICT_MAX_ENTRIES)
                out->n = PY_DICT_MAX_ENTRIES;
        return ok;
}

/* Reads the entries of the keys object at `keys`, in chunks. */
static int walk_keys(pid_t pid, const struct py_offsets *o, uint64_t keys,
                     const struct split_values *values, py_dict_visitor visit, void *arg)
{
        uint8_t header[PY_DICT_HEADER_MAX], entries[CHUNK * 24];
        uint64_t split[CHUNK];
        struct py_dict_table t;
        size_t n;

        if (!pointer_ok(keys) ||
            remote_memory__read(pid, keys, header, sizeof(header)) != sizeof(header) ||
            !py_dict__table(o, keys, header, sizeof(header), &t))
                return -EFAULT;
        n = values->address && values->max < t.n ? values->max : t.n;
        for (size_t first = 0; first < n; first += CHUNK) {
                size_t count = n - first < CHUNK ? n - first : CHUNK;
                ssize_t want = (ssize_t)(count * t.entry_size);
                if (remote_memory__read(pid, t.entries + first * t.entry_size, entries,
                                        (size_t)want) != want)
                        return -EFAULT;
                if (values->address &&
                    remote_memory__read(pid, values->address + o->dict_values_header + 8 * first,
                                        split, 8 * count) != (ssize_t)(8 * count))
                        return -EFAULT;
                for (size_t i = 0; i < count; i++) {
                        const uint8_t *entry = entries + i * t.entry_size;
                        uint64_t key = u64_at(entry, t.key_at);
                        uint64_t value = values->address ? split[i] : u64_at(entry, t.value_at);
                        if (pointer_ok(key) && pointer_ok(value) && !visit(arg, key, value))
                                return 0;
                }
        }
        return 0;
}

/* A split table's values: 3.13+ say how many they hold. */
static bool split_values_at(pid_t pid, const struct py_offsets *o, uint64_t address,
                            struct split_values *out)
{
        uint8_t header[8];

        *out = (struct split_values){.address = address, .max = PY_DICT_MAX_ENTRIES};
        if (!pointer_ok(address))
                return false;
        if (o->dict_values_header == 0)
                return true;
        if (remote_memory__read(pid, address, header, sizeof(header)) != sizeof(header))
                return false;
        out->max = header[0]; /* capacity */
        return true;
}

int py_dict__visit(pid_t pid, const struct py_offsets *o, uint64_t dict, py_dict_visitor visit,
                   void *arg)
{
        uint8_t object[DICT_VALUES_AT + 8];
        uint64_t keys, values_at;
        struct split_values values = {0};

        if (!pointer_ok(dict) || remote_memory__read(pid, dict + o->object_extra, object,
                                                     sizeof(object)) != sizeof(object))
                return -EFAULT;
        /* object holds the dict from object_extra on. */
        keys = u64_at(object, DICT_KEYS_AT);
        values_at = u64_at(object, DICT_VALUES_AT);
        if (values_at && !split_values_at(pid, o, values_at, &values))
                return -EFAULT;
        return walk_keys(pid, o, keys, &values, visit, arg);
}

struct find {
        pid_t pid;
        const struct py_offsets *o;
        const char *name;
        size_t name_len;
        uint64_t value;
};

/* Is the str at `key` exactly `name`?  One read of header + name. */
static bool key_equals(const struct find *f, uint64_t key)
{
        uint8_t buffer[128 + PY_DICT_KEY_MAX];
        char text[PY_DICT_KEY_MAX + 1];
        size_t want = f->o->unicode_ascii_size + f->name_len;
        int64_t length;
        ssize_t got;

        if (want > sizeof(buffer))
                return false;
        got = remote_memory__read(f->pid, key, buffer, want);
        if (got != (ssize_t)want)
                return false;
        memcpy(&length, buffer + f->o->unicode_length, sizeof(length));
        if (length != (int64_t)f->name_len)
                return false;
        return py_string__decode(buffer, (size_t)got, f->o, text, sizeof(text)) ==
                   (int)f->name_len &&
               memcmp(text, f->name, f->name_len) == 0;
}

static bool find_visit(void *arg, uint64_t key, uint64_t value)
{
        struct find *f = arg;

        if (!key_equals(f, key))
                return true;
        f->value = value;
        return false;
}

static struct find find_init(pid_t pid, const struct py_offsets *o, const char *name)
{
        return (struct find){.pid = pid, .o = o, .name = name, .name_len = strlen(name)};
}

uint64_t py_dict__find(pid_t pid, const struct py_offsets *o, uint64_t dict, const char *name)
{
        struct find f = find_init(pid, o, name);

        if (f.name_len == 0 || f.name_len > PY_DICT_KEY_MAX)
                return 0;
        (void)py_dict__visit(pid, o, dict, find_visit, &f);
        return f.value;
}

/* The name in a values array shaped by the type's cached keys. */
static uint64_t find_in_values(pid_t pid, const struct py_offsets *o, uint64_t type,
                               uint64_t values_address, const char *name)
{
        struct find f = find_init(pid, o, name);
        struct split_values values;
        uint64_t keys;

        if (f.name_len == 0 || f.name_len > PY_DICT_KEY_MAX ||
            !read_u64(pid, type + o->heaptype_cached_keys, &keys) ||
            !split_values_at(pid, o, values_address, &values))
                return 0;
        (void)walk_keys(pid, o, keys, &values, find_visit, &f);
        return f.value;
}

struct type_info {
        uint64_t address;
        uint64_t flags;
        int64_t basicsize, dictoffset;
};

static bool read_type(pid_t pid, const struct py_offsets *o, uint64_t object, struct type_info *out)
{
        uint8_t type[TYPE_DICTOFFSET_AT + 8];

        /* type holds the type object from object_extra on. */
        if (!read_u64(pid, object + 8 + o->object_extra, &out->address) ||
            !pointer_ok(out->address) ||
            remote_memory__read(pid, out->address + o->object_extra, type, sizeof(type)) !=
                sizeof(type))
                return false;
        out->flags = u64_at(type, TYPE_FLAGS_AT);
        memcpy(&out->basicsize, type + TYPE_BASICSIZE_AT, sizeof(out->basicsize));
        memcpy(&out->dictoffset, type + TYPE_DICTOFFSET_AT, sizeof(out->dictoffset));
        return out->basicsize >= 16 && out->basicsize < MAX_OBJECT_OFFSET;
}

/* Managed attributes (3.11+): a materialized dict, else the values. */
static uint64_t managed_attribute(pid_t pid, const struct py_offsets *o, uint64_t object,
                                  const struct type_info *type, const char *name)
{
        uint64_t word = 0, values = 0;
        uint8_t valid = 0;

        if (!read_u64(pid, object - (o->free_threaded ? MANAGED_DICT_AT_FT : MANAGED_DICT_AT),
                      &word))
                return 0;
        if (o->managed_dict == PY_MANAGED_312 && (word & 1)) {
                values = word + 1;
        } else if (word) {
                return py_dict__find(pid, o, word, name);
        } else if (o->managed_dict == PY_MANAGED_311) {
                if (!read_u64(pid, object - MANAGED_VALUES_AT_311, &values))
                        return 0;
        } else if (o->managed_dict == PY_MANAGED_INLINE && (type->flags & TPFLAGS_INLINE_VALUES)) {
                values = object + (uint64_t)type->basicsize;
                if (remote_memory__read(pid, values + 3, &valid, 1) != 1 || !valid)
                        return 0;
        }
        if (!values || !(type->flags & TPFLAGS_HEAPTYPE))
                return 0;
        return find_in_values(pid, o, type->address, values, name);
}

uint64_t py_dict__instance_attribute(pid_t pid, const struct py_offsets *o, uint64_t object,
                                     const char *name)
{
        struct type_info type;
        uint64_t dict;

        if (!pointer_ok(object) || !read_type(pid, o, object, &type))
                return 0;
        if (o->managed_dict != PY_MANAGED_NONE && (type.flags & TPFLAGS_MANAGED_DICT))
                return managed_attribute(pid, o, object, &type, name);
        if (type.dictoffset <= 0 || type.dictoffset >= MAX_OBJECT_OFFSET ||
            !read_u64(pid, object + (uint64_t)type.dictoffset, &dict))
                return 0;
        return py_dict__find(pid, o, dict, name);
}
