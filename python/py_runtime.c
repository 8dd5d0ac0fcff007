/* py_runtime.c — is this process CPython, which version, and where is
 * _PyRuntime?
 *
 * Why: every Python read starts at _PyRuntime, the interpreter's one
 * global, and what it holds depends on the exact minor version.
 *
 * How: the candidates are the mapped files named libpython3.* (shared
 * builds, embedding hosts such as uWSGI) and python3* (static builds), and
 * the main executable.  Each is opened through /proc/PID/map_files (or
 * /proc/PID/root), so container paths and deleted files work, and its ELF
 * headers are read with libelf: the ".PyRuntime" section (present even
 * when the symbol tables are stripped), else the _PyRuntime symbol of
 * .symtab or .dynsym, plus Py_Version, PyCode_Type and _Py_NoneStruct.
 * The load bias comes from the file's mappings (symbolize/load_bias).
 *
 * Version, first source that answers: the "xdebugpy" _Py_DebugOffsets at
 * the start of _PyRuntime (3.13+), Py_Version (3.11+), the file name.  The
 * target's binary is never executed.
 *
 * Without a section or symbol, the writable mappings of a file whose name
 * gives the version are scanned: for the 3.13+ cookie, or for a word
 * layout that validates as _PyRuntime (its first interpreter's first
 * thread state points back at that interpreter).  Every candidate found
 * by any route passes that same structural check. */
#include "python/py_runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/remote_memory.h"
#include "symbolize/load_bias.h"
#include "symbolize/proc_maps.h"
#include "symbolize/target_file.h"
#include "util/cleanup.h"
#include "util/log.h"

#define MAX_CANDIDATES     8
#define SCAN_MAX_BYTES     (16u << 20)
#define SCAN_CHUNK         (1u << 20)
#define SCAN_MAX_VALIDATES 4096

struct elf_symbols {
        uint64_t runtime; /* file virtual addresses, 0 = absent */
        uint64_t py_version;
        uint64_t code_type;
        uint64_t none_object;
};

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

unsigned int py_runtime__minor_from_name(const char *path)
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

static void scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, struct elf_symbols *out)
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
        }
}

static void read_elf_symbols(Elf *elf, struct elf_symbols *out)
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
                        scan_symtab(elf, scn, &shdr, out);
        }
        if (section)
                out->runtime = section;
}

static bool read_u64(pid_t pid, uint64_t address, uint64_t *value)
{
        return remote_memory__read(pid, address, value, sizeof(*value)) == sizeof(*value);
}

/* _PyRuntime -> first interpreter -> first thread state -> interp must
 * point back; the thread list may be empty only if the interpreter's
 * `next` looks sane too (rare: a runtime between threads). */
static bool runtime_validates(pid_t pid, uint64_t runtime, const struct py_offsets *o)
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

uint64_t py_runtime__first_interpreter(pid_t pid, const struct py_runtime *runtime)
{
        uint64_t interp;

        if (!read_u64(pid, runtime->runtime_address + runtime->offsets.runtime_interpreters_head,
                      &interp))
                return 0;
        return interp;
}

/* Chooses the offsets for a runtime at `address`; minor_hint from
 * Py_Version or the name (0 = unknown). */
static enum py_discovery choose_offsets(pid_t pid, uint64_t address, unsigned int minor_hint,
                                        uint32_t version_hint, struct py_runtime *out, char *why,
                                        size_t why_size)
{
        uint8_t head[PY_DEBUG_OFFSETS_MAX];
        ssize_t n = remote_memory__read(pid, address, head, sizeof(head));
        const char *reason = NULL;
        uint32_t version = 0;

        if (n >= 8 && memcmp(head, PY_DEBUG_COOKIE, 8) == 0) {
                if (!py_offsets__from_debug(head, (size_t)n, &out->offsets, &version, &reason)) {
                        snprintf(why, why_size, "CPython %u.%u: %s", (version >> 24) & 0xff,
                                 (version >> 16) & 0xff, reason);
                        return PY_DISCOVERY_UNSUPPORTED;
                }
                out->version_hex = version;
                out->minor = out->offsets.minor;
        } else {
                if (minor_hint == 0) {
                        snprintf(why, why_size, "CPython of unknown version");
                        return PY_DISCOVERY_UNSUPPORTED;
                }
                if (!py_offsets__for_minor(minor_hint, &out->offsets)) {
                        snprintf(why, why_size, "CPython 3.%u is not supported", minor_hint);
                        return PY_DISCOVERY_UNSUPPORTED;
                }
                out->version_hex = version_hint;
                out->minor = minor_hint;
        }
        out->runtime_address = address;
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
                                if (runtime_validates(pid, at + off, &offsets))
                                        return at + off;
                        }
                }
        }
        return 0;
}

struct candidate {
        size_t first_map; /* index of the file's first mapping */
        size_t n_maps;    /* consecutive mappings of that file */
};

static size_t find_candidates(const struct proc_maps *maps, const char *exe, struct candidate *out)
{
        size_t n = 0;

        /* Two passes: libpython first, then static interpreters and the
         * executable (an embedding host that statically links CPython). */
        for (int pass = 0; pass < 2; pass++) {
                for (size_t m = 0; m < maps->n && n < MAX_CANDIDATES; m++) {
                        const char *path = maps->maps[m].path;
                        const char *name = base_name(path);
                        if (path[0] != '/' || (m > 0 && strcmp(maps->maps[m - 1].path, path) == 0))
                                continue;
                        bool lib = strncmp(name, "libpython3", 10) == 0;
                        bool other = strncmp(name, "python3", 7) == 0 || strcmp(path, exe) == 0;
                        if (pass == 0 ? !lib : (lib || !other))
                                continue;
                        size_t k = m + 1;
                        while (k < maps->n && strcmp(maps->maps[k].path, path) == 0)
                                k++;
                        out[n++] = (struct candidate){.first_map = m, .n_maps = k - m};
                }
        }
        return n;
}

static enum py_discovery try_candidate(pid_t pid, const struct proc_maps *maps,
                                       const struct candidate *c, struct py_runtime *out, char *why,
                                       size_t why_size)
{
        const struct proc_map *map = &maps->maps[c->first_map];
        _cleanup_close_ int fd = target_file__open_mapping(pid, map);
        _cleanup_(elf_endp) Elf *elf = NULL;
        struct elf_symbols syms;
        uint64_t bias, runtime;
        uint32_t version_hex = 0;
        unsigned int minor = py_runtime__minor_from_name(map->path);

        if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) || elf_kind(elf) != ELF_K_ELF)
                return PY_DISCOVERY_NOT_PYTHON;
        if (!load_bias__compute(elf, map, c->n_maps, (uint64_t)sysconf(_SC_PAGESIZE), &bias))
                return PY_DISCOVERY_NOT_PYTHON;
        read_elf_symbols(elf, &syms);
        if (syms.py_version) {
                uint32_t v;
                if (remote_memory__read(pid, syms.py_version + bias, &v, sizeof(v)) == sizeof(v) &&
                    (v >> 24) == 3) {
                        version_hex = v;
                        minor = (v >> 16) & 0xff;
                }
        }
        if (syms.runtime)
                runtime = syms.runtime + bias;
        else if (minor)
                runtime = scan_for_runtime(pid, maps, map->path, minor);
        else
                return PY_DISCOVERY_NOT_PYTHON;
        if (!runtime)
                return PY_DISCOVERY_NOT_PYTHON;
        enum py_discovery result =
            choose_offsets(pid, runtime, minor, version_hex, out, why, why_size);
        if (result != PY_DISCOVERY_FOUND)
                return result;
        if (!runtime_validates(pid, runtime, &out->offsets)) {
                snprintf(why, why_size, "CPython 3.%u runtime at 0x%llx does not validate",
                         out->minor, (unsigned long long)runtime);
                return PY_DISCOVERY_UNSUPPORTED;
        }
        snprintf(out->path, sizeof(out->path), "%s", map->path);
        out->code_type = syms.code_type ? syms.code_type + bias : 0;
        out->none_object = syms.none_object ? syms.none_object + bias : 0;
        return PY_DISCOVERY_FOUND;
}

enum py_discovery py_runtime__discover(pid_t pid, struct py_runtime *out, char *why,
                                       size_t why_size)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(proc_maps__clearp) struct proc_maps maps = {0};
        struct candidate candidates[MAX_CANDIDATES];
        char link[64], exe[PY_RUNTIME_PATH_MAX] = "";
        size_t len, n;
        ssize_t exe_len;
        enum py_discovery best = PY_DISCOVERY_NOT_PYTHON;
        char reason[256] = "no CPython runtime found";

        memset(out, 0, sizeof(*out));
        elf_version(EV_CURRENT);
        if (proc_maps__read(pid, &text, &len) < 0 || proc_maps__parse(text, len, &maps) < 0) {
                snprintf(why, why_size, "cannot read /proc/%d/maps", (int)pid);
                return PY_DISCOVERY_NOT_PYTHON;
        }
        snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
        exe_len = readlink(link, exe, sizeof(exe) - 1);
        exe[exe_len > 0 ? exe_len : 0] = '\0';
        n = find_candidates(&maps, exe, candidates);
        for (size_t i = 0; i < n; i++) {
                enum py_discovery r =
                    try_candidate(pid, &maps, &candidates[i], out, reason, sizeof(reason));
                if (r == PY_DISCOVERY_FOUND)
                        return r;
                if (r == PY_DISCOVERY_UNSUPPORTED)
                        best = r;
        }
        snprintf(why, why_size, "%s", reason);
        return best;
}
