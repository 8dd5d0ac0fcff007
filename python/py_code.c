/* py_code.c — code objects: name, file, first line and line table.
 *
 * Why: every Python frame points at a code object; turning it into
 * function/file/line needs two strings and a line table, i.e. four remote
 * reads.  Frames repeat from sample to sample, so decoding is done once
 * per code object and cached by address.
 *
 * How: on a miss, the code object's header is read in one read, checked
 * (ob_type is PyCode_Type when that symbol is known; sane first line and
 * pointers), its names are read through py_string and its line table
 * (a bytes object; at most PY_LINETABLE_MAX bytes) is copied.  A hit
 * newer than PY_CODE_REVALIDATE is used as is; an older one re-reads the
 * header and is decoded again only if its name, file, table or first line
 * changed, i.e. the address now holds another code object.  Strings are
 * interned in the per-process pool, so merged stacks kept for idle threads
 * stay valid when the cache is emptied (which happens when it reaches
 * PY_CODE_CACHE_MAX entries).  Garbage gives NULL, and the caller an
 * "<unknown>" frame. */
#include "python/py_code.h"

#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_line.h"
#include "python/py_string.h"
#include "util/log.h"

#define CODE_HEADER_MAX 1024
#define NAME_MAX_BYTES  (PY_STRING_MAX_CHARS * 4 + 1)
#define OB_TYPE         8 /* plus object_extra on free-threaded builds */

static void code_free(struct hash_node *node)
{
        struct py_code *code = container_of(node, struct py_code, node);

        free(code->table);
        free(code);
}

static bool code_eq(const struct hash_node *node, const void *key)
{
        return container_of(node, struct py_code, node)->address == *(const uint64_t *)key;
}

void py_code_cache__init(struct py_code_cache *cache, pid_t pid, const struct py_offsets *offsets,
                         uint64_t code_type, struct string_pool *strings)
{
        memset(cache, 0, sizeof(*cache));
        cache->pid = pid;
        cache->offsets = offsets;
        cache->code_type = code_type;
        cache->strings = strings;
        cache->seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)pid;
}

void py_code_cache__clear(struct py_code_cache *cache)
{
        hashtab__clear(&cache->tab, code_free);
}

static uint64_t field_u64(const uint8_t *header, uint64_t offset)
{
        uint64_t value;

        memcpy(&value, header + offset, sizeof(value));
        return value;
}

static int32_t field_i32(const uint8_t *header, uint64_t offset)
{
        int32_t value;

        memcpy(&value, header + offset, sizeof(value));
        return value;
}

/* Reads and checks the header; fills the identity fields of `code`. */
static bool read_header(struct py_code_cache *cache, uint64_t address, struct py_code *code)
{
        const struct py_offsets *o = cache->offsets;
        uint8_t header[CODE_HEADER_MAX];
        size_t size = o->code_size < sizeof(header) ? o->code_size : sizeof(header);

        if (address < 4096 || (address & 7))
                return false;
        cache->reads++;
        if (remote_memory__read(cache->pid, address, header, size) != (ssize_t)size)
                return false;
        if (cache->code_type && field_u64(header, OB_TYPE + o->object_extra) != cache->code_type)
                return false;
        code->address = address;
        code->name_ptr = field_u64(header, o->code_qualname ? o->code_qualname : o->code_name);
        code->filename_ptr = field_u64(header, o->code_filename);
        code->table_ptr = field_u64(header, o->code_linetable);
        code->first_line = field_i32(header, o->code_firstlineno);
        code->first_traceable =
            o->code_firsttraceable ? field_i32(header, o->code_firsttraceable) : 0;
        return code->first_line >= 0 && code->first_traceable >= 0 &&
               code->first_traceable < (1 << 20);
}

/* The interned text of the str at `address`, or `fallback`. */
static const char *read_name(struct py_code_cache *cache, uint64_t address, const char *fallback)
{
        char text[NAME_MAX_BYTES];
        const char *interned;

        cache->reads++;
        if (py_string__read(cache->pid, address, cache->offsets, text, sizeof(text)) <= 0) {
                log_debug("PID %d: no str at 0x%llx", (int)cache->pid, (unsigned long long)address);
                return fallback;
        }
        /* A process that generates code without end must not grow the
         * pool without end either. */
        if (cache->strings->tab.n_nodes >= PY_STRINGS_MAX)
                return "<too many names>";
        interned = string_pool__intern(cache->strings, text);
        return interned ? interned : fallback;
}

static void read_table(struct py_code_cache *cache, struct py_code *code)
{
        const struct py_offsets *o = cache->offsets;
        int64_t size;

        code->table = NULL;
        code->table_len = 0;
        code->table_valid = false;
        cache->reads++;
        if (code->table_ptr < 4096 ||
            remote_memory__read(cache->pid, code->table_ptr + o->bytes_size, &size, sizeof(size)) !=
                sizeof(size) ||
            size < 0 || (uint64_t)size > PY_LINETABLE_MAX)
                return;
        if (size == 0) {
                /* An empty table is valid: 3.9 then means "first line". */
                code->table_valid = true;
                return;
        }
        code->table = malloc((size_t)size);
        if (!code->table)
                return;
        cache->reads++;
        if (remote_memory__read(cache->pid, code->table_ptr + o->bytes_data, code->table,
                                (size_t)size) != size) {
                free(code->table);
                code->table = NULL;
                return;
        }
        code->table_len = (size_t)size;
        code->table_valid = true;
}

static struct py_code *decode(struct py_code_cache *cache, uint64_t address, uint64_t now_ns)
{
        struct py_code *code = calloc(1, sizeof(*code));

        if (!code)
                return NULL;
        if (!read_header(cache, address, code)) {
                log_debug("PID %d: no code object at 0x%llx", (int)cache->pid,
                          (unsigned long long)address);
                free(code);
                return NULL;
        }
        code->name = read_name(cache, code->name_ptr, PY_UNKNOWN_FUNCTION);
        code->filename = read_name(cache, code->filename_ptr, "");
        read_table(cache, code);
        code->checked_ns = now_ns;
        code->memo_positions[0] = code->memo_positions[1] = -2;
        return code;
}

static bool still_same(struct py_code_cache *cache, struct py_code *code, uint64_t now_ns)
{
        struct py_code fresh;

        if (now_ns - code->checked_ns < PY_CODE_REVALIDATE)
                return true;
        if (!read_header(cache, code->address, &fresh) || fresh.name_ptr != code->name_ptr ||
            fresh.filename_ptr != code->filename_ptr || fresh.table_ptr != code->table_ptr ||
            fresh.first_line != code->first_line)
                return false;
        code->checked_ns = now_ns;
        return true;
}

static void cache_remove(struct py_code_cache *cache, struct py_code *code, uint64_t hash)
{
        struct hash_node **link = &cache->tab.buckets[hash & (cache->tab.n_buckets - 1)];

        for (; *link; link = &(*link)->next) {
                if (*link == &code->node) {
                        *link = code->node.next;
                        cache->tab.n_nodes--;
                        code_free(&code->node);
                        return;
                }
        }
}

struct py_code *py_code__get(struct py_code_cache *cache, uint64_t address, uint64_t now_ns)
{
        uint64_t hash = hash__u64(cache->seed, address);
        struct hash_node *node = hashtab__find(&cache->tab, hash, code_eq, &address);
        struct py_code *code;

        if (node) {
                code = container_of(node, struct py_code, node);
                if (still_same(cache, code, now_ns))
                        return code;
                cache_remove(cache, code, hash);
        }
        code = decode(cache, address, now_ns);
        if (!code)
                return NULL;
        if (cache->tab.n_nodes >= PY_CODE_CACHE_MAX)
                py_code_cache__clear(cache);
        if (hashtab__insert(&cache->tab, &code->node, hash) < 0) {
                code_free(&code->node);
                return NULL;
        }
        return code;
}

static int64_t decode_line(const struct py_code *code, enum py_line_format format, int64_t position)
{
        if (!code->table_valid)
                return -1;
        switch (format) {
        case PY_LINES_LNOTAB:
                return py_line__lnotab(code->table, code->table_len, code->first_line, position);
        case PY_LINES_310:
                return py_line__linetable_310(code->table, code->table_len, code->first_line,
                                              2 * position);
        case PY_LINES_LOCATIONS:
                break;
        }
        return py_line__locations(code->table, code->table_len, code->first_line, position);
}

int64_t py_code__line(struct py_code *code, enum py_line_format format, int64_t position)
{
        int64_t line;

        for (unsigned int i = 0; i < 2; i++)
                if (code->memo_positions[i] == position)
                        return code->memo_lines[i];
        line = decode_line(code, format, position);
        if (position != -2) {
                code->memo_positions[code->memo_next] = position;
                code->memo_lines[code->memo_next] = line;
                code->memo_next ^= 1;
        }
        return line;
}
