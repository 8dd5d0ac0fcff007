/* target_file.c — finding the file the target really mapped.
 *
 * A path in /proc/PID/maps is the target's view: in a container,
 * /usr/lib/x86_64-linux-gnu/libc.so.6 is the container's libc, not ours, and
 * a binary replaced on disk since it was started is not the one running.
 * So the host path is never opened.  The path under /proc/PID/root,
 * resolved with openat2 RESOLVE_IN_ROOT so that an absolute symlink planted
 * in the container cannot point us at a host file, is taken when it is the
 * mapped inode itself; otherwise /proc/PID/map_files/START-END, a handle on
 * the mapped inode (needs root), and last the path whatever its inode.
 * Only regular files are accepted (a FIFO planted at the path would block
 * the open, hence O_NONBLOCK). */
#include "symbolize/target_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/log.h"

#define TARGET_FILE_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* Keeps fd only if it is a regular file; returns fd or -errno. */
static int keep_regular(int fd)
{
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        return fd;
}

static int open_map_files(pid_t pid, const struct proc_map *map)
{
        char path[96];

        snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
                 map->start, map->limit);
        return keep_regular(open(path, TARGET_FILE_FLAGS));
}

int target_file__open_in_root(pid_t pid, const char *path)
{
        struct open_how how = {
            .flags = TARGET_FILE_FLAGS,
            .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int root = -1;
        char root_path[64];
        long fd;

        if (path[0] != '/')
                return -EINVAL;
        snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)pid);
        root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        fd = syscall(SYS_openat2, root, path, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS)
                /* Pre-5.6 kernel: no symlink confinement available. */
                fd = openat(root, path + 1, TARGET_FILE_FLAGS);
        return keep_regular((int)fd);
}

/* The path fallback may find a different file than the mapped one (deleted
 * or replaced): for a deleted mapping demand the same inode.  Otherwise a
 * mismatch is tolerated because overlay filesystems report the upper inode
 * in maps but the overlay's through a path; the load bias check catches
 * gross mismatches. */
static int check_inode(int fd, const struct proc_map *map)
{
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0 || st.st_ino == map->inode)
                return fd;
        if (map->deleted) {
                close(fd);
                return -ESTALE;
        }
        log_debug("%s: inode %" PRIu64 " in maps, %ju on disk", map->path, map->inode,
                  (uintmax_t)st.st_ino);
        return fd;
}

/* Whether `fd` is the very file of the mapping: the same inode on the
 * same device. */
static bool is_mapped_file(int fd, const struct proc_map *map)
{
        struct stat st;

        return fstat(fd, &st) == 0 && st.st_ino == map->inode &&
               major(st.st_dev) == map->dev_major && minor(st.st_dev) == map->dev_minor;
}

/* By path first: a lookup under /proc/PID/root takes no lock of the
 * target, while opening its map_files takes its mmap lock, which a
 * starting process holds for tens to hundreds of ms on a loaded host
 * while its loader maps libraries (issue 20: the span-context module
 * search opens every mapped ELF file of a new process).  Only the very
 * mapped file is taken that way (same inode and device: not a deleted or
 * replaced one, nor an overlay's other inode); anything else is opened
 * through map_files, as before. */
int target_file__open_mapping(pid_t pid, const struct proc_map *map)
{
        int fd;

        if (map->path[0] == '/' && !map->deleted) {
                fd = target_file__open_in_root(pid, map->path);
                if (fd >= 0 && is_mapped_file(fd, map))
                        return fd;
                if (fd >= 0)
                        close(fd);
        }
        fd = open_map_files(pid, map);
        if (fd >= 0)
                return fd;
        if (map->path[0] != '/')
                return -ENOENT;
        return check_inode(target_file__open_in_root(pid, map->path), map);
}
