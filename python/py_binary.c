/* py_binary.c — one CPython binary, read once, shared by its processes.
 *
 * Why: discovery used to open and read the interpreter's ELF file again
 * for every process (its symbol tables, Py_Version, _Py_DebugOffsets), all
 * of which is the same for every process of that file.  Only the load bias
 * and what lives in the process's heap differ.  So the first process of a
 * binary reads it here and the others find it by file key (the
 * symbolizer's, so "the same file" means the same thing for symbols and for
 * Python: build-id, else dev+inode+mtime+size).  A binary is freed when its
 * last process goes, so memory follows the live processes under churn.
 *
 * How (first sight): the file is opened through /proc/PID/map_files (or
 * /proc/PID/root), so container paths and deleted files work, and its ELF
 * headers are read with libelf: the ".PyRuntime" section (present even
 * when the symbol tables are stripped), else the _PyRuntime symbol of
 * .symtab or .dynsym, plus Py_Version, PyCode_Type, _Py_NoneStruct and
 * the interpreter loop's ranges.  The load bias comes from the file's
 * mappings (symbolize/load_bias).
 *
 * Version, first source that answers: the "xdebugpy" _Py_DebugOffsets at
 * the start of _PyRuntime (3.13+), Py_Version (3.11+), the PY_VERSION
 * string in .rodata (3.9, 3.10: rodata_version), the file name.  The
 * first two are read in the process's memory, but are static data of the
 * file, the same in every process.  The target's binary is never executed,
 * and its name is the last resort: `venv --copies` or a container image
 * may call a 3.9 interpreter plain "python3".
 *
 * Without a section or symbol, the writable mappings of a file whose name
 * gives the version are scanned: for the 3.13+ cookie, or for a word
 * layout that validates as _PyRuntime (py_binary__runtime_validates).  The
 * address found is kept relative to the file: .data and the .bss after it
 * sit at the same file address in every process. */
#include "python/py_binary.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "attach/remote_memory.h"
#include "symbolize/load_bias.h"
#include "symbolize/target_file.h"
#include "unwind/stack_merge.h"
#include "util/cleanup.h"
#include "util/log.h"

#define SCAN_MAX_BYTES     (16u << 20)
#define SCAN_CHUNK         (1u << 20)
#define SCAN_MAX_VALIDATES 4096
#define RODATA_MAX_BYTES   (64u << 20)
#define VERSION_TEXT_MAX   16 /* "3.10.12rc2+" and some */

struct elf_symbols {
        uint64_t runtime; /* file virtual addresses, 0 = absent */
        uint64_t py_version;
        uint64_t code_type;
        uint64_t none_object;
};

static bool py_binary__eq(const struct hash_node *node, const void *key)
{
        return strcmp(container_of(node, struct py_binary, node)->key, key) == 0;
}

static void py_binary__free(struct py_binary *binary)
{
        free(binary->key);
        free(binary);
}

static void py_binary__free_node(struct hash_node *node)
{
        py_binary__free(container_of(node, struct py_binary, node));
}

void py_binaries__init(struct py_binaries *binaries)
{
        uint64_t seed = 0;

        /* Keys come from the target's files: a seed makes collisions
         * harder to arrange in advance. */
        if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
                seed = (uint64_t)(uintptr_t)binaries ^ (uint64_t)getpid();
        *binaries = (struct py_binaries){.seed = seed};
}

void py_binaries__clear(struct py_binaries *binaries)
{
        if (binaries->tab.n_nodes)
                log_debug("%zu Python binaries still referenced at exit", binaries->tab.n_nodes);
        hashtab__clear(&binaries->tab, py_binary__free_node);
        for (size_t i = 0; i < PY_BINARIES_REFUSED; i++) {
                free(binaries->refused[i].key);
                free(binaries->refused[i].why);
                binaries->refused[i].key = binaries->refused[i].why = NULL;
        }
}

const char *py_binaries__refused(const struct py_binaries *binaries, const char *key)
{
        for (size_t i = 0; i < PY_BINARIES_REFUSED; i++)
                if (binaries->refused[i].key && strcmp(binaries->refused[i].key, key) == 0)
                        return binaries->refused[i].why;
        return NULL;
}

/* Remembers a refusal; out of memory, the next process is warned again. */
static void py_binaries__refuse(struct py_binaries *binaries, const char *key, const char *why)
{
        size_t at = binaries->next_refused;
        char *key_copy = strdup(key), *why_copy = strdup(why);

        if (!key_copy || !why_copy) {
                free(key_copy);
                free(why_copy);
                return;
        }
        free(binaries->refused[at].key);
        free(binaries->refused[at].why);
        binaries->refused[at].key = key_copy;
        binaries->refused[at].why = why_copy;
        binaries->next_refused = (at + 1) % PY_BINARIES_REFUSED;
}

struct py_binary *py_binaries__find(struct py_binaries *binaries, const char *key)
{
        uint64_t hash = hash__bytes(binaries->seed, key, strlen(key));
        struct hash_node *node = hashtab__find(&binaries->tab, hash, py_binary__eq, key);
        struct py_binary *binary;

        if (!node)
                return NULL;
        binary = container_of(node, struct py_binary, node);
        binary->users++;
        return binary;
}

void py_binary__unref(struct py_binary *binary)
{
        if (!binary || --binary->users > 0)
                return;
        if (binary->owner)
                hashtab__remove(&binary->owner->tab, &binary->node);
        py_binary__free(binary);
}

/* Shares `binary` under `key`.  On failure it stays private: still
 * correct, only not shared. */
static void py_binaries__add(struct py_binaries *binaries, const char *key,
                             struct py_binary *binary)
{
        uint64_t hash = hash__bytes(binaries->seed, key, strlen(key));

        binary->key = strdup(key);
        if (!binary->key)
                return;
        if (hashtab__insert(&binaries->tab, &binary->node, hash) < 0) {
                free(binary->key);
                binary->key = NULL;
                return;
        }
        binary->owner = binaries;
}

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

unsigned int py_binary__minor_from_name(const char *path)
{
        const char *name = base_name(path);
        unsigned int minor = 0;
        const char *p;

        if (strncmp(name, "libpython3.", 11) == 0)
                p = name + 11;
        else if (strncmp(name, "python3.", 8) == 0)
                p = name + 8;
        else
                return 0;
        for (; *p >= '0' && *p <= '9' && minor < 1000; p++)
                minor = minor * 10 + (unsigned int)(*p - '0');
        return minor;
}

/* Up to two decimal digits at *p, advancing it; -1 when none. */
static int small_number(const char **p, const char *end)
{
        int value = -1;

        for (int digits = 0; *p < end && **p >= '0' && **p <= '9' && digits < 2; digits++, (*p)++)
                value = (value < 0 ? 0 : value * 10) + (**p - '0');
        return *p < end && **p >= '0' && **p <= '9' ? -1 : value;
}

uint32_t py_binary__parse_version(const char *text, size_t len)
{
        const char *p = text, *end = text + len;
        int minor, micro, serial = 0;
        unsigned int level = 0xf; /* final */

        if (len < 5 || strncmp(p, "3.", 2) != 0)
                return 0;
        p += 2;
        if ((minor = small_number(&p, end)) < 0 || p == end || *p++ != '.' ||
            (micro = small_number(&p, end)) < 0)
                return 0;
        if (p < end && (*p == 'a' || *p == 'b' || *p == 'r')) {
                level = *p == 'a' ? 0xa : *p == 'b' ? 0xb : 0xc;
                if (*p == 'r' && (++p == end || *p != 'c'))
                        return 0;
                p++;
                if ((serial = small_number(&p, end)) < 0)
                        return 0;
        }
        if (p < end && *p == '+')
                p++;
        if (p != end)
                return 0;
        return 3u << 24 | (uint32_t)minor << 16 | (uint32_t)micro << 8 | level << 4 |
               (uint32_t)serial;
}

/* A candidate for PY_VERSION: a minor we read that has no Py_Version. */
static bool version_without_symbol(uint32_t version)
{
        struct py_offsets offsets;
        unsigned int minor = (version >> 16) & 0xff;

        return version && py_offsets__for_minor(minor, &offsets) && !offsets.version_symbol;
}

/* PY_VERSION of a 3.9 or 3.10 binary: Py_GetVersion() formats sys.version
 * from that string literal, which .rodata holds as a string of its own.
 * Other strings there look like versions (unicodedata's "3.2.0", for its
 * 3.2 database), so only a minor without Py_Version that we read counts,
 * and two different ones make the answer unknown (0).  Bounded by the
 * section, itself capped; the ELF file is already mapped. */
static uint32_t rodata_version(Elf *elf)
{
        size_t shstrndx;
        Elf_Scn *scn = NULL;
        uint32_t found = 0;

        if (elf_getshdrstrndx(elf, &shstrndx) < 0)
                return 0;
        while ((scn = elf_nextscn(elf, scn)) != NULL) {
                GElf_Shdr shdr;
                const char *name;
                Elf_Data *data;
                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
                    !(name = elf_strptr(elf, shstrndx, shdr.sh_name)) ||
                    strcmp(name, ".rodata") != 0 || !(data = elf_getdata(scn, NULL)) ||
                    !data->d_buf)
                        continue;
                const char *bytes = data->d_buf;
                size_t size = data->d_size < RODATA_MAX_BYTES ? data->d_size : RODATA_MAX_BYTES;
                for (size_t at = 0; at + 5 < size; at++) {
                        if (bytes[at] != '3' || bytes[at + 1] != '.' || (at && bytes[at - 1]))
                                continue;
                        const char *nul =
                            memchr(bytes + at, '\0',
                                   size - at < VERSION_TEXT_MAX ? size - at : VERSION_TEXT_MAX);
                        uint32_t version =
                            nul ? py_binary__parse_version(bytes + at, (size_t)(nul - (bytes + at)))
                                : 0;
                        if (!version_without_symbol(version))
                                continue;
                        if (found && version != found)
                                return 0;
                        found = version;
                }
        }
        return found;
}

/* A sized function symbol of the interpreter loop, kept once. */
static void add_eval_range(struct py_binary *binary, const GElf_Sym *sym)
{
        struct py_range range = {.start = sym->st_value, .end = sym->st_value + sym->st_size};

        if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_size == 0 || range.end < range.start)
                return;
        for (size_t i = 0; i < binary->n_eval; i++)
                if (binary->eval[i].start == range.start)
                        return; /* in both .symtab and .dynsym */
        if (binary->n_eval < PY_EVAL_RANGES)
                binary->eval[binary->n_eval++] = range;
}

static void scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, struct elf_symbols *out,
                        struct py_binary *binary)
{
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t n;

        if (!data || shdr->sh_entsize == 0)
                return;
        n = shdr->sh_size / shdr->sh_entsize;
        for (size_t i = 0; i < n; i++) {
                GElf_Sym sym;
                const char *name;
                if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
                    sym.st_value == 0)
                        continue;
                name = elf_strptr(elf, shdr->sh_link, sym.st_name);
                if (!name || name[0] == '\0')
                        continue;
                if (!out->runtime && strcmp(name, "_PyRuntime") == 0)
                        out->runtime = sym.st_value;
                else if (!out->py_version && strcmp(name, "Py_Version") == 0)
                        out->py_version = sym.st_value;
                else if (!out->code_type && strcmp(name, "PyCode_Type") == 0)
                        out->code_type = sym.st_value;
                else if (!out->none_object && strcmp(name, "_Py_NoneStruct") == 0)
                        out->none_object = sym.st_value;
                else if (stack_merge__is_eval_function(name))
                        add_eval_range(binary, &sym);
        }
}

static void read_elf_symbols(Elf *elf, struct elf_symbols *out, struct py_binary *binary)
{
        size_t shstrndx;
        Elf_Scn *scn = NULL;
        uint64_t section = 0;

        memset(out, 0, sizeof(*out));
        if (elf_getshdrstrndx(elf, &shstrndx) < 0)
                return;
        while ((scn = elf_nextscn(elf, scn)) != NULL) {
                GElf_Shdr shdr;
                const char *name;
                if (!gelf_getshdr(scn, &shdr))
                        continue;
                name = elf_strptr(elf, shstrndx, shdr.sh_name);
                if (name && strcmp(name, ".PyRuntime") == 0)
                        section = shdr.sh_addr;
                else if (shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM)
                        scan_symtab(elf, scn, &shdr, out, binary);
        }
        if (section)
                out->runtime = section;
}

static bool read_u64(pid_t pid, uint64_t address, uint64_t *value)
{
        return remote_memory__read(pid, address, value, sizeof(*value)) == sizeof(*value);
}

/* The thread list may not be empty: a runtime between threads is rare,
 * and an empty list proves nothing about the layout. */
bool py_binary__runtime_validates(pid_t pid, uint64_t runtime, const struct py_offsets *o)
{
        uint64_t interp, tstate, back;

        if (!read_u64(pid, runtime + o->runtime_interpreters_head, &interp) || interp < 4096 ||
            (interp & 7))
                return false;
        if (!read_u64(pid, interp + o->interp_threads_head, &tstate) || (tstate & 7))
                return false;
        if (tstate == 0)
                return false;
        return read_u64(pid, tstate + o->tstate_interp, &back) && back == interp;
}

/* Chooses the layout for a runtime at `address` in `pid`; minor_hint from
 * Py_Version or the name (0 = unknown).  *lasting: a refusal is a property
 * of the file, not of a runtime mapped only in part yet. */
static enum py_discovery choose_offsets(pid_t pid, uint64_t address, unsigned int minor_hint,
                                        uint32_t version_hint, struct py_binary *out, char *why,
                                        size_t why_size, bool *lasting)
{
        uint8_t head[PY_DEBUG_OFFSETS_MAX];
        ssize_t n = remote_memory__read(pid, address, head, sizeof(head));
        uint32_t version = 0;

        *lasting = n == (ssize_t)sizeof(head);

        if (n >= 8 && memcmp(head, PY_DEBUG_COOKIE, 8) == 0) {
                if (!py_offsets__from_debug(head, (size_t)n, &out->offsets, &version, why,
                                            why_size))
                        return PY_DISCOVERY_UNSUPPORTED;
                out->version_hex = version;
                out->minor = out->offsets.minor;
                return PY_DISCOVERY_FOUND;
        }
        if (minor_hint == 0) {
                snprintf(why, why_size, "CPython of unknown version");
                return PY_DISCOVERY_UNSUPPORTED;
        }
        if (!py_offsets__for_minor(minor_hint, &out->offsets)) {
                py_offsets__why_unsupported(version_hint ? version_hint
                                                         : 3u << 24 | minor_hint << 16,
                                            "no layout for this minor version", why, why_size);
                return PY_DISCOVERY_UNSUPPORTED;
        }
        out->version_hex = version_hint;
        out->minor = minor_hint;
        return PY_DISCOVERY_FOUND;
}

/* Scans the writable mappings of the file for _PyRuntime. */
static uint64_t scan_for_runtime(pid_t pid, const struct proc_maps *maps, const char *path,
                                 unsigned int minor)
{
        struct py_offsets offsets;
        bool have_table = py_offsets__for_minor(minor, &offsets);
        _cleanup_free_ uint8_t *buffer = malloc(SCAN_CHUNK);
        size_t scanned = 0, validated = 0;

        if (!buffer)
                return 0;
        for (size_t m = 0; m < maps->n && scanned < SCAN_MAX_BYTES; m++) {
                const struct proc_map *map = &maps->maps[m];
                /* The file's own data and the anonymous .bss right after it. */
                bool ours =
                    strcmp(map->path, path) == 0 ||
                    (m > 0 && map->path[0] == '\0' && strcmp(maps->maps[m - 1].path, path) == 0);
                if (!ours || map->executable)
                        continue;
                for (uint64_t at = map->start; at < map->limit && scanned < SCAN_MAX_BYTES;
                     at += SCAN_CHUNK) {
                        size_t len = map->limit - at < SCAN_CHUNK ? map->limit - at : SCAN_CHUNK;
                        ssize_t got = remote_memory__read(pid, at, buffer, len);
                        if (got <= 0)
                                break;
                        scanned += (size_t)got;
                        for (size_t off = 0; off + 16 <= (size_t)got; off += 8) {
                                if (memcmp(buffer + off, PY_DEBUG_COOKIE, 8) == 0)
                                        return at + off;
                                if (!have_table || validated >= SCAN_MAX_VALIDATES)
                                        continue;
                                uint64_t head = off + offsets.runtime_interpreters_head;
                                uint64_t interp;
                                if (head + 8 > (uint64_t)got)
                                        continue;
                                memcpy(&interp, buffer + head, 8);
                                if (interp < 4096 || (interp & 7) || interp >> 47)
                                        continue;
                                validated++;
                                if (py_binary__runtime_validates(pid, at + off, &offsets))
                                        return at + off;
                        }
                }
        }
        return 0;
}

/* The version Py_Version (3.11+) gives in `pid`, or 0. */
static uint32_t read_py_version(pid_t pid, uint64_t address)
{
        uint32_t v;

        if (!address || remote_memory__read(pid, address, &v, sizeof(v)) != sizeof(v) ||
            (v >> 24) != 3)
                return 0;
        return v;
}

enum py_discovery py_binary__read(struct py_binaries *binaries, const char *key, pid_t pid,
                                  const struct proc_maps *maps, size_t first, size_t n,
                                  struct py_binary **out, uint64_t *bias, char *why,
                                  size_t why_size)
{
        const struct proc_map *map = &maps->maps[first];
        _cleanup_close_ int fd = target_file__open_mapping(pid, map);
        _cleanup_(elf_endp) Elf *elf = NULL;
        _cleanup_(py_binary__unrefp) struct py_binary *binary = calloc(1, sizeof(*binary));
        struct elf_symbols syms;
        uint64_t runtime;
        uint32_t version_hex;
        unsigned int minor = py_binary__minor_from_name(map->path);
        enum py_discovery result;
        bool lasting;

        *out = NULL;
        if (!binary) {
                snprintf(why, why_size, "out of memory");
                return PY_DISCOVERY_UNSUPPORTED;
        }
        binary->users = 1;
        elf_version(EV_CURRENT);
        if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) || elf_kind(elf) != ELF_K_ELF)
                return PY_DISCOVERY_NOT_PYTHON;
        if (!load_bias__compute(elf, map, n, (uint64_t)sysconf(_SC_PAGESIZE), bias))
                return PY_DISCOVERY_NOT_PYTHON;
        read_elf_symbols(elf, &syms, binary);
        version_hex = read_py_version(pid, syms.py_version ? syms.py_version + *bias : 0);
        if (!version_hex)
                version_hex = rodata_version(elf);
        if (version_hex)
                minor = (version_hex >> 16) & 0xff;
        if (syms.runtime)
                runtime = syms.runtime + *bias;
        else if (minor)
                runtime = scan_for_runtime(pid, maps, map->path, minor);
        else
                return PY_DISCOVERY_NOT_PYTHON;
        if (!runtime)
                return PY_DISCOVERY_NOT_PYTHON;
        result = choose_offsets(pid, runtime, minor, version_hex, binary, why, why_size, &lasting);
        if (result == PY_DISCOVERY_UNSUPPORTED && lasting && binaries && key)
                py_binaries__refuse(binaries, key, why);
        if (result != PY_DISCOVERY_FOUND)
                return result;
        binary->runtime = runtime - *bias;
        binary->code_type = syms.code_type;
        binary->none_object = syms.none_object;
        log_debug("PID %d: %s: CPython binary read (%s)", (int)pid, map->path,
                  key ? key : "not shared");
        if (binaries) {
                binaries->parsed++;
                if (key)
                        py_binaries__add(binaries, key, binary);
        }
        *out = take_ptr(binary);
        return PY_DISCOVERY_FOUND;
}
