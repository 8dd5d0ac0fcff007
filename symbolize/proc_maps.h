/* proc_maps.h — reading and parsing /proc/PID/maps. */
#pragma once

#include <stdio.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_MAPS_MAX_ENTRIES  65536
#define PROC_MAPS_MAX_LINE     (4096 + 256)
#define PROC_MAPS_MAX_PATH     4096
#define PROC_MAPS_MAX_TEXT     (32u << 20)
#define PROC_MAPS_DELETED_MARK " (deleted)"

struct proc_map {
        uint64_t start;
        uint64_t limit;
        uint64_t offset;
        uint64_t inode;
        unsigned int dev_major;
        unsigned int dev_minor;
        bool executable;
        bool deleted;     /* the path had the " (deleted)" suffix (stripped) */
        const char *path; /* "" for anonymous; points into struct proc_maps */
};

struct proc_maps {
        struct proc_map *maps;
        size_t n;
        char *text; /* NUL-separated copy of the lines the paths point into */
};

/* Reads the whole maps file into a malloc'd buffer (at most
 * PROC_MAPS_MAX_TEXT bytes).  Returns 0 or -errno. */
int proc_maps__read(pid_t pid, char **text, size_t *len);
/* Parses maps text; malformed lines are skipped.  Returns 0 or -ENOMEM. */
int proc_maps__parse(const char *text, size_t len, struct proc_maps *out);
void proc_maps__clear(struct proc_maps *maps);
/* A stream of the maps lines: over `text` (`len` bytes, borrowed, e.g.
 * address_space__maps_text) when given, so that a caller with a fresh copy
 * does not make the kernel format them again under the target's mmap lock,
 * else over /proc/PID/maps.  NULL with errno set. */
FILE *proc_maps__open(pid_t pid, const char *text, size_t len);
/* For _cleanup_(proc_maps__clearp) struct proc_maps maps = {0}: a value,
 * not a pointer, so DEFINE_TRIVIAL_CLEANUP_FUNC does not apply. */
static inline void proc_maps__clearp(struct proc_maps *maps)
{
        proc_maps__clear(maps);
}
