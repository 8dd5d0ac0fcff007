/* elf_file.h — process-independent identity of a mapped ELF file. */
#pragma once

#include <gelf.h>
#include <stdbool.h>

#include "util/hashtab.h"
#include "util/string_pool.h"

struct shared_symbols;

#define ELF_FILE_MAX_BUILD_ID 64 /* bytes; longer notes are ignored */

struct elf_file {
        struct hash_node node;
        const char *key;          /* interned "b:<build-id>" or "f:<dev>:<ino>:<mtime>:<size>" */
        const char *build_id_hex; /* interned lowercase hex, "" when none */
        bool has_debug_info;      /* some lookup found line numbers in it */
        /* Shared handles (shared_elf.c), held while some process maps it: */
        unsigned int users;             /* modules of live address spaces */
        Elf *elf;                       /* the image, read-only; NULL when no user */
        struct shared_symbols *symbols; /* symbolization Dwfl, created on demand */
};

struct elf_files {
        struct hashtab tab;
        struct string_pool *strings;
};

void elf_files__init(struct elf_files *files, struct string_pool *strings);
/* Frees every record.  `release` (not NULL) first frees what the record
 * still holds beyond itself (shared_elf__clear: the image and DWARF, which
 * shared_elf.c owns); it is called once per record, during the call only. */
void elf_files__clear(struct elf_files *files, void (*release)(struct elf_file *file));
/* The record for the file open as `elf` on `fd`, created on first sight.
 * Returns NULL when out of memory or when the file cannot be identified. */
struct elf_file *elf_files__get(struct elf_files *files, Elf *elf, int fd);
