/* thread_context.c — see thread_context.h.
 *
 * Module search: every file mapping at offset 0 not looked at before
 * (by device and inode) is opened as the target sees it; a .dynsym entry
 * named otel_thread_ctx_v1 of type STT_TLS, defined, gives the variable's
 * offset in the module's TLS block; PT_TLS and PT_DYNAMIC come from the
 * program headers.  The first module found wins (OTEP 4947: one symbol per
 * process).  The search also notes ld.so's `_rtld_global` (.dynsym), whose
 * thread lists give blocked threads' TCBs (thread_tcb.h).
 *
 * Link map: r_debug from the executable's DT_DEBUG (in its dynamic section
 * in memory), r_map, then link_map entries {l_addr, l_name, l_ld, l_next}
 * (the public part of glibc's struct) until l_ld is the module's dynamic
 * section.  The TLS fields are private to glibc and move between versions,
 * so they are found by content: l_tls_initimage, _initimage_size,
 * _blocksize, _align are four consecutive words equal to the module's
 * bias + p_vaddr, p_filesz, p_memsz, p_align; l_tls_firstbyte_offset,
 * l_tls_offset and l_tls_modid follow (glibc 2.2x..2.4x, checked by
 * tests/test_otel_context.py).  l_tls_offset 0 (NO_TLS_OFFSET) or -1
 * (FORCED_DYNAMIC_TLS_OFFSET) means dynamic TLS.
 *
 * Per thread (x86-64, variant II): static TLS: the variable is at
 * fs_base - l_tls_offset + st_value (no read).  Dynamic TLS: tcb->dtv at
 * fs_base + 8; dtv[-1] holds the entry count, dtv[modid].val the block
 * (-1: not allocated yet, so the thread never set the variable).  The
 * block does not move while the module stays loaded, so the address is
 * remembered per thread.  Then the pointer (8 bytes) and the record
 * (one read of up to CAPTURE_THREAD_RECORD_BYTES; a short read keeps what
 * arrived). */
#include "context/thread_context.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "attach/remote_memory.h"
#include "symbolize/load_bias.h"
#include "symbolize/proc_maps.h"
#include "symbolize/target_file.h"
#include "util/cleanup.h"
#include "util/hex.h"
#include "util/log.h"

#define LINK_MAP_MAX        4096 /* entries walked */
#define LINK_MAP_BYTES      1536 /* of one struct link_map searched for TLS fields */
#define DYNAMIC_MAX         512  /* entries of the executable's dynamic section */
#define DTV_MAX_ENTRIES     65536
#define TLS_DTV_UNALLOCATED UINT64_MAX
#define TLS_FORCED_DYNAMIC  (-1)

void thread_context__init(struct thread_context *context, pid_t pid)
{
        memset(context, 0, sizeof(*context));
        context->pid = pid;
        (void)elf_version(EV_CURRENT); /* idempotent; libelf needs it once */
}

static void context__warn(struct thread_context *context, const char *why)
{
        if (context->warned)
                return;
        context->warned = true;
        log_warning("PID %d: ignoring OpenTelemetry thread context: %s", (int)context->pid, why);
}

static bool seen(struct thread_context *context, const struct proc_map *map)
{
        uint64_t dev = ((uint64_t)map->dev_major << 32) | map->dev_minor;

        for (size_t i = 0; i < context->n_seen; i++)
                if (context->seen[i].dev == dev && context->seen[i].inode == map->inode)
                        return true;
        if (context->n_seen < THREAD_CONTEXT_SEEN_FILES)
                context->seen[context->n_seen++] = (typeof(context->seen[0])){dev, map->inode};
        return false;
}

/* The defined symbol `wanted` of `type` in .dynsym: its value and size. */
static bool find_symbol(Elf *elf, const char *wanted, int type, uint64_t *value, uint64_t *size)
{
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(elf, scn))) {
                GElf_Shdr shdr;
                Elf_Data *data;
                if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || !shdr.sh_entsize)
                        continue;
                data = elf_getdata(scn, NULL);
                size_t n = data ? data->d_size / shdr.sh_entsize : 0;
                for (size_t i = 0; i < n && i < (1u << 22); i++) {
                        GElf_Sym sym;
                        const char *name;
                        if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != type ||
                            sym.st_shndx == SHN_UNDEF)
                                continue;
                        name = elf_strptr(elf, shdr.sh_link, sym.st_name);
                        if (name && strcmp(name, wanted) == 0) {
                                *value = sym.st_value;
                                *size = sym.st_size;
                                return true;
                        }
                }
        }
        return false;
}

/* PT_TLS and PT_DYNAMIC of `elf`. */
static bool program_headers(Elf *elf, struct thread_context_module *module, uint64_t *dynamic)
{
        size_t n;
        bool tls = false;

        *dynamic = 0;
        if (elf_getphdrnum(elf, &n) != 0)
                return false;
        for (size_t i = 0; i < n && i < 256; i++) {
                GElf_Phdr ph;
                if (!gelf_getphdr(elf, (int)i, &ph))
                        continue;
                if (ph.p_type == PT_DYNAMIC)
                        *dynamic = ph.p_vaddr;
                if (ph.p_type == PT_TLS) {
                        module->tls_vaddr = ph.p_vaddr;
                        module->tls_filesz = ph.p_filesz;
                        module->tls_memsz = ph.p_memsz;
                        module->tls_align = ph.p_align;
                        tls = true;
                }
        }
        return tls;
}

/* The consecutive maps of the file whose offset-0 mapping is maps[i]. */
static size_t same_file_run(const struct proc_maps *maps, size_t i)
{
        size_t j = i + 1;

        while (j < maps->n && maps->maps[j].inode == maps->maps[i].inode &&
               maps->maps[j].dev_major == maps->maps[i].dev_major &&
               maps->maps[j].dev_minor == maps->maps[i].dev_minor)
                j++;
        return j - i;
}

static void look_at(struct thread_context *context, const struct proc_maps *maps, size_t i,
                    const struct stat *exe)
{
        const struct proc_map *map = &maps->maps[i];
        size_t run = same_file_run(maps, i);
        _cleanup_close_ int fd = target_file__open_mapping(context->pid, map);
        _cleanup_(elf_endp) Elf *elf = NULL;
        struct thread_context_module module = {0};
        uint64_t dynamic, bias;
        bool is_exe = exe && map->inode == exe->st_ino && map->dev_major == major(exe->st_dev) &&
                      map->dev_minor == minor(exe->st_dev);

        if (fd < 0)
                return;
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF ||
            !load_bias__compute(elf, map, run, (uint64_t)sysconf(_SC_PAGESIZE), &bias))
                return;
        bool tls = program_headers(elf, &module, &dynamic);
        uint64_t value, size;
        if (is_exe && dynamic)
                context->exe_dynamic = bias + dynamic;
        /* ld.so's, whose thread lists give blocked threads' TCBs (thread_tcb.h). */
        if (!context->rtld_global && find_symbol(elf, "_rtld_global", STT_OBJECT, &value, &size)) {
                context->rtld_global = bias + value;
                context->rtld_global_size = size;
        }
        if (context->has_module || !tls || !dynamic ||
            !find_symbol(elf, THREAD_CONTEXT_SYMBOL, STT_TLS, &module.sym_value, &size))
                return;
        module.bias = bias;
        module.dynamic = bias + dynamic;
        if (module.sym_value + 8 > module.tls_memsz) {
                context__warn(context, "otel_thread_ctx_v1 lies outside its TLS segment");
                return;
        }
        context->module = module;
        context->has_module = true;
        context->resolved = false;
        context->next_resolve_ns = 0;
        log_info("PID %d: OpenTelemetry thread context: %s in %s", (int)context->pid,
                 THREAD_CONTEXT_SYMBOL, map->path);
}

static void search_modules(struct thread_context *context, const char *known, size_t known_len)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(proc_maps__clearp) struct proc_maps maps = {0};
        char exe_path[64];
        struct stat exe;
        size_t len;
        bool have_exe;

        snprintf(exe_path, sizeof(exe_path), "/proc/%d/exe", (int)context->pid);
        have_exe = stat(exe_path, &exe) == 0;
        if (!known && proc_maps__read(context->pid, &text, &len) == 0)
                known = text, known_len = len;
        if (!known || proc_maps__parse(known, known_len, &maps) < 0)
                return;
        for (size_t i = 0; i < maps.n; i++) {
                const struct proc_map *map = &maps.maps[i];
                if (map->offset != 0 || map->path[0] != '/' || map->inode == 0)
                        continue;
                bool exe_map = have_exe && map->inode == exe.st_ino;
                if (seen(context, map) && !(exe_map && !context->exe_dynamic))
                        continue;
                look_at(context, &maps, i, have_exe ? &exe : NULL);
        }
}

bool thread_context__link_map_tls(const uint8_t *link_map, size_t len,
                                  const struct thread_context_module *module, int64_t *tls_offset,
                                  uint64_t *modid)
{
        const uint64_t want[4] = {module->bias + module->tls_vaddr, module->tls_filesz,
                                  module->tls_memsz, module->tls_align};

        /* From after the public fields (l_addr .. l_prev). */
        for (size_t at = 40; at + 7 * 8 <= len; at += 8) {
                if (memcmp(link_map + at, want, sizeof(want)) != 0)
                        continue;
                memcpy(tls_offset, link_map + at + 5 * 8, 8);
                memcpy(modid, link_map + at + 6 * 8, 8);
                return *modid >= 1 && *modid < DTV_MAX_ENTRIES;
        }
        return false;
}

/* r_debug.r_map from the executable's DT_DEBUG, 0 when not (yet) set. */
static uint64_t link_map_head(struct thread_context *context)
{
        uint64_t dyn[2 * 64], rmap;

        if (!context->exe_dynamic)
                return 0;
        for (size_t at = 0; at < DYNAMIC_MAX; at += 64) {
                ssize_t n = remote_memory__read(context->pid, context->exe_dynamic + at * 16, dyn,
                                                sizeof(dyn));
                for (ssize_t i = 0; n > 0 && i < n / 16; i++) {
                        if (dyn[2 * i] == DT_NULL)
                                return 0;
                        if (dyn[2 * i] == DT_DEBUG && dyn[2 * i + 1] &&
                            remote_memory__read(context->pid, dyn[2 * i + 1] + 8, &rmap, 8) == 8)
                                return rmap;
                }
                if (n != (ssize_t)sizeof(dyn))
                        return 0;
        }
        return 0;
}

static void resolve(struct thread_context *context)
{
        uint64_t lm = link_map_head(context);
        uint8_t bytes[LINK_MAP_BYTES];

        for (int n = 0; lm && n < LINK_MAP_MAX; n++) {
                uint64_t pub[5]; /* l_addr, l_name, l_ld, l_next, l_prev */
                if (remote_memory__read(context->pid, lm, pub, sizeof(pub)) != (ssize_t)sizeof(pub))
                        break;
                if (pub[2] != context->module.dynamic) {
                        lm = pub[3];
                        continue;
                }
                ssize_t got = remote_memory__read(context->pid, lm, bytes, sizeof(bytes));
                int64_t offset;
                uint64_t modid;
                if (got > 0 && thread_context__link_map_tls(bytes, (size_t)got, &context->module,
                                                            &offset, &modid)) {
                        bool dynamic = offset == 0 || offset == TLS_FORCED_DYNAMIC;
                        int64_t now = dynamic ? 0 : offset;
                        if (!context->resolved || now != context->tls_offset ||
                            modid != context->modid)
                                context->serial++;
                        context->tls_offset = now;
                        context->modid = modid;
                        context->resolved = true;
                        log_debug("PID %d: %s: TLS module %" PRIu64 ", %s offset %" PRId64,
                                  (int)context->pid, THREAD_CONTEXT_SYMBOL, modid,
                                  dynamic ? "dynamic" : "static", now);
                        return;
                }
                context__warn(context, "TLS fields not found in the module's link_map");
                return;
        }
}

void thread_context__refresh(struct thread_context *context, uint64_t now_ns, bool rediscover,
                             uint64_t maps_generation, const char *maps_text, size_t maps_len)
{
        if (rediscover) {
                pid_t pid = context->pid;
                uint32_t serial = context->serial;
                thread_context__init(context, pid);
                context->serial = serial + 1;
        }
        if (!context->has_module &&
            (!maps_generation || maps_generation != context->scanned_generation)) {
                context->scanned_generation = maps_generation;
                search_modules(context, maps_text, maps_len);
        }
        if (!context->has_module || now_ns < context->next_resolve_ns)
                return;
        /* Unresolved (ld.so not done yet) or dynamic (a later static
         * placement, dlclose) is looked at again; static TLS never moves. */
        if (context->resolved && context->tls_offset != 0)
                return;
        context->next_resolve_ns = now_ns + THREAD_CONTEXT_RESOLVE_NS;
        resolve(context);
}

/* The variable's address in dynamic TLS, from the thread's DTV. */
static uint64_t dtv_lookup(const struct thread_context *context, uint64_t fs_base)
{
        uint64_t dtv, count[2], entry[2];
        struct iovec local[2] = {{count, sizeof(count)}, {entry, sizeof(entry)}}, remote[2];

        if (process_vm_readv(context->pid, &(struct iovec){&dtv, 8}, 1,
                             &(struct iovec){(void *)(uintptr_t)(fs_base + 8), 8}, 1, 0) != 8 ||
            dtv < 16)
                return 0;
        remote[0] = (struct iovec){(void *)(uintptr_t)(dtv - 16), sizeof(count)};
        remote[1] = (struct iovec){(void *)(uintptr_t)(dtv + 16 * context->modid), sizeof(entry)};
        if (process_vm_readv(context->pid, local, 2, remote, 2, 0) != 32 ||
            count[0] < context->modid || entry[0] == 0 || entry[0] == TLS_DTV_UNALLOCATED)
                return 0;
        return entry[0] + context->module.sym_value;
}

void thread_context__capture(const struct thread_context *context, struct capture *capture,
                             uint64_t fs_base, uint64_t *var_cache, uint32_t *var_serial)
{
        uint64_t var, record;
        ssize_t got;

        capture->thread_record_state = 0;
        if (!context->resolved || !fs_base)
                return;
        if (context->tls_offset) {
                var = fs_base - (uint64_t)context->tls_offset + context->module.sym_value;
        } else if (*var_cache && *var_serial == context->serial) {
                var = *var_cache;
        } else {
                var = dtv_lookup(context, fs_base);
                if (!var) { /* the thread never touched the variable */
                        capture->thread_record_state = 1;
                        return;
                }
                *var_cache = var;
                *var_serial = context->serial;
        }
        if (process_vm_readv(capture->pid, &(struct iovec){&record, 8}, 1,
                             &(struct iovec){(void *)(uintptr_t)var, 8}, 1, 0) != 8)
                return;
        capture->thread_record_state = 1;
        if (!record || (record & 1)) /* NULL, or not 2-byte aligned */
                return;
        got = process_vm_readv(
            capture->pid, &(struct iovec){capture->thread_record, sizeof(capture->thread_record)},
            1, &(struct iovec){(void *)(uintptr_t)record, sizeof(capture->thread_record)}, 1, 0);
        if (got >= (ssize_t)THREAD_CONTEXT_HEADER_BYTES) {
                capture->thread_record_len = (size_t)got;
                capture->thread_record_state = 2;
        }
}

/* Attribute i of the record, last occurrence of a key winning. */
static void add_attribute(struct thread_record *record, const char *key, const uint8_t *value,
                          size_t len)
{
        size_t i = 0;
        char *out;

        while (i < record->n_attrs && strcmp(record->keys[i], key) != 0)
                i++;
        if (i == THREAD_CONTEXT_MAX_ATTRS)
                return;
        if (i == record->n_attrs)
                record->n_attrs++;
        record->keys[i] = key;
        out = record->values[i];
        /* Labels are text: control bytes become '?'. */
        for (size_t j = 0; j < len; j++)
                out[j] = value[j] < 0x20 || value[j] == 0x7f ? '?' : (char)value[j];
        out[len] = '\0';
}

enum thread_record_state thread_record__decode(const uint8_t *bytes, size_t len,
                                               const struct process_context *keys,
                                               struct thread_record *record)
{
        uint16_t attrs_size;
        const uint8_t *p, *end;

        memset(record, 0, offsetof(struct thread_record, values));
        if (len < THREAD_CONTEXT_HEADER_BYTES)
                return THREAD_RECORD_ABSENT;
        if (bytes[24] != 1 || hex__all_zero(bytes, 16) || hex__all_zero(bytes + 16, 8))
                return THREAD_RECORD_NONE;
        hex__encode(record->trace_id, bytes, 16);
        hex__encode(record->span_id, bytes + 16, 8);
        record->trace_flags = bytes[25];
        memcpy(&attrs_size, bytes + 26, 2);
        p = bytes + THREAD_CONTEXT_HEADER_BYTES;
        end = p + (attrs_size < len - THREAD_CONTEXT_HEADER_BYTES
                       ? attrs_size
                       : len - THREAD_CONTEXT_HEADER_BYTES);
        /* Entries {u8 key index, u8 length, bytes}; stop at an incomplete one. */
        while (end - p >= 2 && end - p - 2 >= p[1]) {
                const char *key = keys ? process_context__key(keys, p[0]) : NULL;
                if (key)
                        add_attribute(record, key, p + 2, p[1]);
                else if (!keys || p[0] >= keys->n_keys)
                        record->unknown_key = true;
                p += 2 + p[1];
        }
        return THREAD_RECORD_SPAN;
}
