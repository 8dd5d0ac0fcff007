/* module_report.h — reporting one mapped ELF file to the process's Dwfl. */
#pragma once

#include <stddef.h>

#include "symbolize/proc_maps.h"
#include "symbolize/symbolizer_internal.h"

/* Describes the consecutive mappings maps[0..n) of one file, named `name`
 * (interned counted in the symbolizer's strings: the record takes over that
 * reference, module__drop), in *m, before anything is reported. */
void module__init(struct module *m, const char *name, const struct proc_map *maps, size_t n);
/* Reports the file of *m (from module__init) as a module of space->dwfl,
 * between dwfl_report_begin and dwfl_report_end.  `old` is the same file's
 * record from the previous report, if any, whose libdwfl module is then
 * kept as is.  When the file cannot be opened or does not match its
 * mappings, m->dwfl_module and m->file stay NULL; otherwise the record
 * holds a reference on m->file. */
void module__report(struct address_space *space, const struct proc_map *maps, size_t n,
                    const struct module *old, struct module *m);
/* Drops the record's reference on its file (shared_elf.c); call once the
 * record has left the address space's layout. */
void module__release(struct module *m);
/* Frees what the record holds: the file (module__release) and its names.
 * Module paths are counted in the string pool because they need not repeat:
 * a program unpacked to a new directory for every run (PyInstaller's
 * one-file mode, native libraries extracted by Java and Python packages)
 * maps new paths in every process. */
void module__drop(struct address_space *space, struct module *m);
/* Whether two records describe the same mapped file at the same place. */
bool module__same(const struct module *a, const struct module *b);
