/* symbolizer.h — turns code addresses of a target process into function,
 * source file, line and inline chain, and gives the unwinder the CFI it
 * needs.
 *
 * Two objects:
 *   struct symbolizer     process-independent caches, keyed by ELF build-id
 *                         (or by file identity when there is no build-id):
 *                         opened ELF images, debuginfo, and resolved
 *                         (build-id, file-relative address) -> lines.  A
 *                         second process of the same binary costs no new
 *                         mapping, fd or DWARF parsing and no new lookups;
 *                         a file's image and DWARF are freed when the last
 *                         process mapping it goes away (shared_elf.c).
 *   struct address_space  one per target process: its file mappings from
 *                         /proc/PID/maps and a libdwfl Dwfl with one module
 *                         per mapped ELF file (for the unwinder's CFI),
 *                         found through /proc/PID/map_files and
 *                         /proc/PID/root so that containers and deleted
 *                         binaries work.
 *
 * Everything read from the target (maps, ELF files) is untrusted: sizes are
 * capped and failures degrade to "unknown", never to a crash.
 *
 * Strings handed out (function, file, build-id, file key) are interned and
 * stay valid until symbolizer__free(); a mapping's path only as long as the
 * mapping, that is its address space (paths need not repeat across
 * processes, so they are freed with the last one mapping them). */
#pragma once

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/symbol.h"
#include "util/cleanup.h"

struct symbolizer;
struct address_space;

struct symbolizer *symbolizer__new(void);
/* Free every address space of the symbolizer first: they hold references
 * on its per-file records. */
void symbolizer__free(struct symbolizer *symbolizer);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct symbolizer *, symbolizer__free, symbolizer__freep)

/* Sizes of the shared caches, for the health line: what the daemon keeps
 * across processes, so that growth under churn can be told from a leak. */
struct symbolizer_stats {
        size_t lines;           /* resolved (file, address) entries in the line cache */
        size_t lines_max;       /* its bound: LINE_CACHE_MAX_ENTRIES per generation, 2 */
        uint64_t lines_evicted; /* entries it dropped so far, as bounded */
        size_t strings;         /* interned strings */
        size_t mappings;        /* pooled mappings of live address spaces */
        size_t files;           /* ELF file records (one per build-id ever seen) */
};
void symbolizer__stats(const struct symbolizer *symbolizer, struct symbolizer_stats *out);

/* Reads /proc/PID/maps and reports every mapped ELF file to a new Dwfl.
 * Returns NULL (errno set) when the process is gone or unreadable. */
struct address_space *address_space__new(struct symbolizer *symbolizer, pid_t pid);
/* The same with the maps text read elsewhere (maps_reader.h), so that the
 * caller need not wait on the process's mmap lock; its ownership passes
 * here, freed in any case. */
struct address_space *address_space__new_with_maps(struct symbolizer *symbolizer, pid_t pid,
                                                   char *maps_text, size_t len);
void address_space__free(struct address_space *space);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct address_space *, address_space__free, address_space__freep)

/* Reads the process's maps, files and debuginfo through /proc/`pid` from
 * now on: a live thread's tid once the leader has exited (pthread_exit).
 * 0 or -ENOMEM (the old pid is kept for the debuginfo path then). */
int address_space__set_pid(struct address_space *space, pid_t pid);

/* Re-reads /proc/PID/maps if it changed since the last call (dlopen, exec)
 * and re-reports modules.  Cheap when nothing changed.  Returns 0 or -errno. */
int address_space__refresh(struct address_space *space);
/* The same with a maps text read elsewhere (maps_reader.h), whose
 * ownership passes here, freed in any case. */
int address_space__apply_maps(struct address_space *space, char *maps_text, size_t len);

/* The maps text last reported (its `len` bytes, not NUL-terminated), so
 * that other readers of the layout need not read /proc/PID/maps again;
 * NULL before the first.  Valid until the next refresh. */
const char *address_space__maps_text(const struct address_space *space, size_t *len);

/* Changes whenever a refresh found different mappings, so callers can
 * drop their own address-keyed caches. */
uint64_t address_space__generation(const struct address_space *space);

/* The Dwfl holding this process's modules, for dwfl_attach_state() and
 * dwfl_getthread_frames() by the unwinder.  Owned by the address space. */
Dwfl *address_space__dwfl(struct address_space *space);

/* Looks up a code address.  `address` is already adjusted by the caller for
 * return addresses (pc - 1 for every frame but the innermost).  Never fails:
 * unknown parts are "" / 0 and n_lines is at least 1.  Served from the
 * build-id keyed cache after the first lookup. */
void address_space__symbolize(struct address_space *space, uint64_t address,
                              struct symbolized_pc *out);

/* The ELF function symbol holding `address`, as [*start, *end) in the
 * process's addresses, when it has a size and lies inside the mapping that
 * holds `address`.  Looked up only in the file's symbol table shared by
 * every process (shared_elf.c), so asking costs no per-process symbol table
 * or debuginfo; false when that table cannot be made.  *name,
 * if asked for, stays valid while the process maps the file.  Returns false
 * when no such symbol is known. */
bool address_space__function_range(struct address_space *space, uint64_t address, uint64_t *start,
                                   uint64_t *end, const char **name);

/* The identity of the ELF file loaded at `address` in this process, for
 * callers that keep their own per-binary data: *key is the symbolizer's
 * key of that file (its GNU build-id, else dev+inode+mtime+size;
 * elf_file.c), the same string for every process that maps the same file
 * and valid until symbolizer__free(); *bias is the file's load bias in
 * this process.  Returns false when no module with a known file holds
 * `address`. */
bool address_space__file_key(struct address_space *space, uint64_t address, const char **key,
                             uint64_t *bias);

/* The mapping that holds `address`, or NULL. */
const struct mapped_file *address_space__mapping_at(struct address_space *space, uint64_t address);
