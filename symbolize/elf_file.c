/* elf_file.c — one record per distinct ELF file, whatever process maps it.
 *
 * The line cache must not be per process: the same libc is mapped by every
 * process, at a different address each time.  So resolved lines are keyed
 * by (file, file-relative address), and this module says what "the same
 * file" is: the GNU build-id when there is one (it survives copies,
 * containers and reinstalls of identical builds), else the on-disk identity
 * dev+inode+mtime+size of the mapped inode.  Keys are interned strings, so a
 * record is found by pointer once its key is built, and records live until
 * the symbolizer is freed (they are small and bounded by distinct files).
 * The heavy per-file state (open image, parsed DWARF) hangs off a record
 * only while some process maps the file: see shared_elf.c. */
#include "symbolize/elf_file.h"

#include <elfutils/libdwelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "util/hex.h"

static bool elf_file__eq(const struct hash_node *node, const void *key)
{
        return container_of(node, struct elf_file, node)->key == key;
}

struct elf_file_release {
        void (*release)(struct elf_file *file);
};

static void elf_file__free(struct hash_node *node, void *arg)
{
        struct elf_file *file = container_of(node, struct elf_file, node);

        ((const struct elf_file_release *)arg)->release(file);
        free(file);
}

void elf_files__init(struct elf_files *files, struct string_pool *strings)
{
        *files = (struct elf_files){.strings = strings};
}

void elf_files__clear(struct elf_files *files, void (*release)(struct elf_file *file))
{
        struct elf_file_release how = {release};

        hashtab__clear_arg(&files->tab, elf_file__free, &how);
}

/* Writes the lowercase hex build-id into hex (2 * ELF_FILE_MAX_BUILD_ID + 1
 * bytes); "" when there is none or it is implausibly long. */
static void build_id__hex(Elf *elf, char *hex)
{
        const void *bits = NULL;
        ssize_t len = dwelf_elf_gnu_build_id(elf, &bits);

        hex[0] = '\0';
        if (len <= 0 || len > ELF_FILE_MAX_BUILD_ID || !bits)
                return;
        hex__encode(hex, bits, (size_t)len);
}

static const char *elf_file__key(struct elf_files *files, const char *build_id_hex, int fd)
{
        char key[2 * ELF_FILE_MAX_BUILD_ID + 128];
        struct stat st;

        if (build_id_hex[0]) {
                snprintf(key, sizeof(key), "b:%s", build_id_hex);
        } else {
                if (fstat(fd, &st) < 0)
                        return NULL;
                snprintf(key, sizeof(key), "f:%ju:%ju:%jd.%09ld:%jd", (uintmax_t)st.st_dev,
                         (uintmax_t)st.st_ino, (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                         (intmax_t)st.st_size);
        }
        return string_pool__intern(files->strings, key);
}

struct elf_file *elf_files__get(struct elf_files *files, Elf *elf, int fd)
{
        char hex[2 * ELF_FILE_MAX_BUILD_ID + 1];
        const char *key, *build_id;
        struct hash_node *found;
        struct elf_file *file;
        uint64_t hash;

        build_id__hex(elf, hex);
        key = elf_file__key(files, hex, fd);
        build_id = string_pool__intern(files->strings, hex);
        if (!key || !build_id)
                return NULL;
        hash = hash__u64(files->strings->seed, (uintptr_t)key);
        found = hashtab__find(&files->tab, hash, elf_file__eq, key);
        if (found)
                return container_of(found, struct elf_file, node);
        file = calloc(1, sizeof(*file));
        if (!file)
                return NULL;
        file->key = key;
        file->build_id_hex = build_id;
        if (hashtab__insert(&files->tab, &file->node, hash) < 0) {
                free(file);
                return NULL;
        }
        return file;
}
