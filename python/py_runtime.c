/* py_runtime.c — is this process CPython, and where is its _PyRuntime?
 *
 * Why: every Python read starts at _PyRuntime, the interpreter's one
 * global, and what it holds depends on the exact minor version.
 *
 * How: the candidates are the mapped files named libpython3.* (shared
 * builds, embedding hosts such as uWSGI) and python3* (static builds), and
 * the main executable.  For each, the symbolizer's address space already
 * knows the file's key and load bias; a binary of that key seen in another
 * process (py_binary) answers at once, with no file opened.  Otherwise the
 * file is read (py_binary__read) and shared for the next process.  Either
 * way the runtime address must validate in this process (its first
 * interpreter's first thread state points back at that interpreter), so a
 * process that has not started its interpreter yet is not taken. */
#include "python/py_runtime.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/remote_memory.h"
#include "python/py_dict.h"
#include "symbolize/proc_maps.h"
#include "symbolize/symbolizer.h"
#include "util/cleanup.h"
#include "util/log.h"

#define MAX_CANDIDATES 8

uint64_t py_runtime__first_interpreter(pid_t pid, const struct py_runtime *runtime)
{
        uint64_t address = runtime->runtime_address + runtime->offsets->runtime_interpreters_head;
        uint64_t interp;

        if (remote_memory__read(pid, address, &interp, sizeof(interp)) != sizeof(interp))
                return 0;
        return interp;
}

/* PyModuleObject.md_dict follows PyObject_HEAD (3.9–3.15), whose
 * free-threaded form is object_extra bytes longer. */
#define MODULE_DICT_AT 16

uint64_t py_runtime__module(pid_t pid, const struct py_runtime *runtime, const char *name)
{
        const struct py_offsets *o = runtime->offsets;
        uint64_t interp = py_runtime__first_interpreter(pid, runtime), modules;

        if (!o->interp_modules || interp < 4096 ||
            remote_memory__read(pid, interp + o->interp_modules, &modules, sizeof(modules)) !=
                sizeof(modules))
                return 0;
        return py_dict__find(pid, o, modules, name);
}

uint64_t py_runtime__module_dict(pid_t pid, const struct py_runtime *runtime, const char *name)
{
        uint64_t module = py_runtime__module(pid, runtime, name), dict;

        if (module < 4096 ||
            remote_memory__read(pid, module + MODULE_DICT_AT + runtime->offsets->object_extra,
                                &dict, sizeof(dict)) != sizeof(dict))
                return 0;
        return dict;
}

struct candidate {
        size_t first_map; /* index of the file's first mapping */
        size_t n_maps;    /* consecutive mappings of that file */
};

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

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

/* The binary of candidate `c`: shared when another process runs the same
 * file, else read now.  *bias is its load bias in `pid`. */
static enum py_discovery binary_of(pid_t pid, struct address_space *space,
                                   struct py_binaries *binaries, const struct proc_maps *maps,
                                   const struct candidate *c, struct py_binary **out,
                                   uint64_t *bias, char *why, size_t why_size)
{
        const char *key = NULL, *refused;

        if (space && binaries &&
            address_space__file_key(space, maps->maps[c->first_map].start, &key, bias)) {
                *out = py_binaries__find(binaries, key);
                if (*out) {
                        log_debug("PID %d: %s: CPython binary already known, not read again",
                                  (int)pid, maps->maps[c->first_map].path);
                        return PY_DISCOVERY_FOUND;
                }
                if ((refused = py_binaries__refused(binaries, key))) {
                        snprintf(why, why_size, "%s", refused);
                        return PY_DISCOVERY_REFUSED;
                }
        }
        return py_binary__read(binaries, key, pid, maps, c->first_map, c->n_maps, out, bias, why,
                               why_size);
}

static void log_found(pid_t pid, const struct py_runtime *rt, const char *path)
{
        uint32_t v = rt->binary->version_hex;

        if (v)
                log_info("PID %d: CPython %u.%u.%u, runtime at 0x%llx in %s", (int)pid,
                         (v >> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff,
                         (unsigned long long)rt->runtime_address, path);
        else
                log_info("PID %d: CPython 3.%u, runtime at 0x%llx in %s", (int)pid,
                         rt->binary->minor, (unsigned long long)rt->runtime_address, path);
}

static enum py_discovery try_candidate(pid_t pid, struct address_space *space,
                                       struct py_binaries *binaries, const struct proc_maps *maps,
                                       const struct candidate *c, struct py_runtime *out, char *why,
                                       size_t why_size)
{
        const struct proc_map *last = &maps->maps[c->first_map + c->n_maps - 1];
        _cleanup_(py_binary__unrefp) struct py_binary *binary = NULL;
        uint64_t bias = 0, runtime;
        enum py_discovery result =
            binary_of(pid, space, binaries, maps, c, &binary, &bias, why, why_size);

        if (result != PY_DISCOVERY_FOUND)
                return result;
        runtime = binary->runtime + bias;
        if (!py_binary__runtime_validates(pid, runtime, &binary->offsets)) {
                snprintf(why, why_size, "CPython 3.%u runtime at 0x%llx does not validate",
                         binary->minor, (unsigned long long)runtime);
                return PY_DISCOVERY_UNSUPPORTED;
        }
        *out = (struct py_runtime){
            .offsets = &binary->offsets,
            .bias = bias,
            .runtime_address = runtime,
            .code_type = binary->code_type ? binary->code_type + bias : 0,
            .none_object = binary->none_object ? binary->none_object + bias : 0,
            .start = maps->maps[c->first_map].start,
            .limit = last->limit,
        };
        out->binary = take_ptr(binary);
        log_found(pid, out, maps->maps[c->first_map].path);
        return PY_DISCOVERY_FOUND;
}

enum py_discovery py_runtime__discover(pid_t pid, struct address_space *space,
                                       struct py_binaries *binaries, struct py_runtime *out,
                                       char *why, size_t why_size)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(proc_maps__clearp) struct proc_maps maps = {0};
        struct candidate candidates[MAX_CANDIDATES];
        char link[64], exe[PATH_MAX] = "";
        size_t len, n;
        ssize_t exe_len;
        enum py_discovery best = PY_DISCOVERY_NOT_PYTHON;
        char reason[256] = "no CPython runtime found";

        memset(out, 0, sizeof(*out));
        /* The address space's copy, as of its last refresh: a second read
         * here would wait on a starting process's mmap lock again, on the
         * tracer thread.  A library mapped since then changes the space's
         * generation, which is when discovery is retried. */
        const char *known = space ? address_space__maps_text(space, &len) : NULL;
        if (!known && proc_maps__read(pid, &text, &len) == 0)
                known = text;
        if (!known || proc_maps__parse(known, len, &maps) < 0) {
                snprintf(why, why_size, "cannot read /proc/%d/maps", (int)pid);
                return PY_DISCOVERY_NOT_PYTHON;
        }
        snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
        exe_len = readlink(link, exe, sizeof(exe) - 1);
        exe[exe_len > 0 ? exe_len : 0] = '\0';
        n = find_candidates(&maps, exe, candidates);
        for (size_t i = 0; i < n; i++) {
                enum py_discovery r = try_candidate(pid, space, binaries, &maps, &candidates[i],
                                                    out, reason, sizeof(reason));
                if (r == PY_DISCOVERY_FOUND)
                        return r;
                if (r == PY_DISCOVERY_UNSUPPORTED ||
                    (r == PY_DISCOVERY_REFUSED && best == PY_DISCOVERY_NOT_PYTHON))
                        best = r;
        }
        snprintf(why, why_size, "%s", reason);
        return best;
}

void py_runtime__clear(struct py_runtime *runtime)
{
        py_binary__unref(runtime->binary);
        *runtime = (struct py_runtime){0};
}
