/* thread_context.h — OTEP 4947 thread context, read from outside: each
 * thread's TLS variable otel_thread_ctx_v1 (exported in .dynsym of the
 * executable or of any library, loaded at start or by dlopen) points to its
 * current Thread-Local Context Record.
 *
 * Set-up (after attach and whenever the maps change, never in the stop
 * window): find the module that defines the symbol, its TLS segment, and
 * from the target's link map (r_debug via the executable's DT_DEBUG) the
 * module's TLS id and static TLS offset.  Per thread-sample (in the stop
 * window, or while the thread is verified blocked): process_vm_readv only.
 * x86-64 glibc, TLS variant II: a module in static TLS (initial-exec,
 * local-exec, and libraries loaded at start) has its block at
 * fs_base - l_tls_offset; a dlopen'ed one in dynamic TLS is found through
 * the thread's DTV, tcb->dtv[modid]. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/target.h"
#include "context/process_context.h"

#define THREAD_CONTEXT_SYMBOL       "otel_thread_ctx_v1"
#define THREAD_CONTEXT_HEADER_BYTES 28u
#define THREAD_CONTEXT_MAX_ATTRS    16u /* attributes labelled per sample */
#define THREAD_CONTEXT_SEEN_FILES   1024u
#define THREAD_CONTEXT_RESOLVE_NS   (1000ull * 1000 * 1000) /* link map re-read */

struct thread_context_module {
        uint64_t dynamic;   /* runtime address of its PT_DYNAMIC (link_map.l_ld) */
        uint64_t bias;      /* load bias */
        uint64_t sym_value; /* st_value: offset of the variable in the TLS block */
        uint64_t tls_vaddr, tls_filesz, tls_memsz, tls_align; /* PT_TLS */
};

struct thread_context {
        pid_t pid;
        bool has_module;
        struct thread_context_module module;
        uint64_t exe_dynamic; /* runtime PT_DYNAMIC of the executable, 0: unknown */
        /* ld.so's _rtld_global (.dynsym), 0: not found (thread_tcb.h). */
        uint64_t rtld_global, rtld_global_size;
        /* From the link map: */
        bool resolved;
        int64_t tls_offset; /* static TLS: block at fs_base - tls_offset; 0: dynamic */
        uint64_t modid;     /* DTV index */
        uint32_t serial;    /* bumped whenever the resolution changes */
        uint64_t next_resolve_ns;
        uint64_t scanned_generation;
        bool warned;
        size_t n_seen; /* files already looked at, by (dev, inode) */
        struct {
                uint64_t dev, inode;
        } seen[THREAD_CONTEXT_SEEN_FILES];
};

/* One decoded record: ids as lowercase hex, attributes named by the key
 * map (a pointer into the process context, valid until its next refresh). */
struct thread_record {
        char trace_id[33];
        char span_id[17];
        uint8_t trace_flags;
        size_t n_attrs;
        bool unknown_key; /* an index beyond the key map: refresh the map */
        const char *keys[THREAD_CONTEXT_MAX_ATTRS];
        /* Last: thread_record__decode clears everything before it only. */
        char values[THREAD_CONTEXT_MAX_ATTRS][256];
};

enum thread_record_state {
        THREAD_RECORD_ABSENT, /* nothing read (no module, no fs_base, unreadable) */
        THREAD_RECORD_NONE,   /* no span: NULL pointer, invalid or zero ids */
        THREAD_RECORD_SPAN,
};

void thread_context__init(struct thread_context *context, pid_t pid);

/* Outside the stop window: looks for the module when the maps changed
 * (`maps_generation`, 0: unknown, always look) or `rediscover`, and
 * (re-)reads the link map while unresolved or in dynamic TLS.  `maps_text`:
 * the maps of `maps_generation` (proc_maps__open), or NULL. */
void thread_context__refresh(struct thread_context *context, uint64_t now_ns, bool rediscover,
                             uint64_t maps_generation, const char *maps_text, size_t maps_len);

/* Stop window (or verified blocked): copies the thread's record into its
 * capture.  `fs_base` is the thread's TCB (0: unknown, nothing copied);
 * `var_cache` and `var_serial` are the thread's remembered variable
 * address for dynamic TLS. */
void thread_context__capture(const struct thread_context *context, struct capture *capture,
                             uint64_t fs_base, uint64_t *var_cache, uint32_t *var_serial);

/* Pure: decodes a copied record (`len` bytes; `state` from the capture). */
enum thread_record_state thread_record__decode(const uint8_t *bytes, size_t len,
                                               const struct process_context *keys,
                                               struct thread_record *record);

/* Pure, for tests: finds glibc's TLS fields in a copied link_map given the
 * module's PT_TLS; false when not found. */
bool thread_context__link_map_tls(const uint8_t *link_map, size_t len,
                                  const struct thread_context_module *module, int64_t *tls_offset,
                                  uint64_t *modid);
