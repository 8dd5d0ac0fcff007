/* symbolizer_internal.h — layout of the objects of symbolizer.h, shared by
 * the files of symbolize/ only. */
#pragma once

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/elf_file.h"
#include "symbolize/line_cache.h"
#include "symbolize/mapping_pool.h"
#include "util/string_pool.h"
#include "symbolize/symbolizer.h"

struct symbolizer {
        struct string_pool strings;
        struct elf_files files;
        struct line_cache lines;
        struct mapping_pool mappings;
};

/* One mapped ELF file of the process (a group of consecutive mappings). */
struct module {
        Dwfl_Module *dwfl_module; /* NULL when the file could not be used */
        struct elf_file *file;    /* NULL when dwfl_module is; holds a reference */
        uint64_t start;           /* first mapping's start */
        uint64_t limit;           /* last mapping's limit */
        uint64_t bias;            /* runtime address - ELF address */
        uint64_t low, high;       /* libdwfl's range, to keep it on refresh */
        const char *dwfl_name;    /* interned "path [file key]", the libdwfl module's */
        /* Identity across refreshes: */
        const char *name; /* interned target path */
        uint64_t inode;
        unsigned int dev_major, dev_minor;
        uint64_t first_offset;
};

struct address_space {
        struct symbolizer *symbolizer;
        pid_t pid;
        uint64_t page_size;
        Dwfl *dwfl;
        Dwfl_Callbacks callbacks;
        char *debuginfo_path; /* callbacks.debuginfo_path points here */
        char *maps_text;      /* as last reported, to detect changes */
        size_t maps_len;
        uint64_t generation;    /* bumped whenever the maps text changed */
        struct module *modules; /* sorted by start, disjoint */
        size_t n_modules;
        struct mapped_file **mappings; /* executable ones, sorted by start */
        size_t n_mappings;
        struct module *reporting; /* the module whose image libdwfl is loading */
};

/* The module holding address, or NULL. */
struct module *address_space__module_at(struct address_space *space, uint64_t address);
/* Mutable form of address_space__mapping_at(). */
struct mapped_file *address_space__mapping_mut(struct address_space *space, uint64_t address);
