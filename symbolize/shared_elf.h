/* shared_elf.h — one open ELF image and one symbolization Dwfl per distinct
 * file (build-id), shared by every process that maps it. */
#pragma once

#include <elfutils/libdwfl.h>
#include <sys/types.h>

#include "symbolize/elf_file.h"

/* Takes a user reference on file for one module of one address space.  The
 * first reference opens the shared image from fd; fd is always consumed
 * (closed).  Returns 0 or -errno (no reference is then taken). */
int shared_elf__acquire(struct elf_file *file, int fd);
/* One more reference on a file that already has one. */
void shared_elf__ref(struct elf_file *file);
/* Drops a reference; the last one closes the image and the symbolization
 * Dwfl (its parsed DWARF), so nothing outlives the processes mapping it. */
void shared_elf__release(struct elf_file *file);
/* A new libelf reference to the shared image, for a libdwfl find_elf
 * callback (libdwfl elf_end()s it with its module), or NULL. */
Elf *shared_elf__dup(struct elf_file *file);
/* [low, high) of the file's loaded segments when loaded with `bias`, as
 * dwfl_report_elf would compute them.  Returns false if it has no PT_LOAD. */
bool shared_elf__range(struct elf_file *file, uint64_t bias, uint64_t *low, uint64_t *high);
/* The module of the file's symbolization Dwfl, in which addresses are ELF
 * addresses (load bias 0).  Created on first use, from the view of process
 * pid (debuginfo under /proc/PID/root, .gnu_debuglink next to `path`, the
 * target's path of the file), with its symbol table (and so its debuginfo
 * file, for a stripped one) loaded at once.  NULL when it cannot be made. */
Dwfl_Module *shared_elf__symbols(struct elf_file *file, pid_t pid, const char *path);
/* The sized function symbol of the file that contains `address` (an ELF
 * address, load bias 0), the nearest-starting one when several do, a
 * global one among equals: [start, end) and its name, which lives as long
 * as the file's image.  The same view of the file as shared_elf__symbols;
 * a binary search in a table sorted on the first call.  False when no
 * function symbol contains it or there is no symbol table. */
bool shared_elf__function_at(struct elf_file *file, pid_t pid, const char *path, uint64_t address,
                             uint64_t *start, uint64_t *end, const char **name);
/* The same module, with its DWARF parsed (once, on the first call), for
 * line lookups.  NULL when the module cannot be made. */
Dwfl_Module *shared_elf__dwarf(struct elf_file *file, pid_t pid, const char *path);
/* Frees whatever a file still holds (symbolizer__free). */
void shared_elf__clear(struct elf_file *file);
