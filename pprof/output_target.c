/* output_target.c — see output_target.h.
 *
 * Why not just rename over the path: as root, `-o /dev/null` would turn
 * the null device into a regular file, `-o /dev/stdout` would replace the
 * /dev/stdout symlink, and a profile path that is a symlink (a common way
 * to point a fixed name at a dated file) would lose the link.  So the
 * path is looked at first, with stat() (which follows links, also the
 * /proc/self/fd "magic" ones): only a regular file or a name that does
 * not exist yet is replaced, and then under its real name.
 *
 * The checks run at the start of a run (output_target__check) so that a
 * typo costs nothing, and again at the end (the file system may have
 * changed in between); if the end fails, the caller saves the profile
 * under output_target__fallback's name instead of losing it. */
#include "pprof/output_target.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "util/cleanup.h"

/* The kernel's own limit on symlinks followed in one lookup. */
#define MAX_LINK_HOPS 40

__attribute__((format(printf, 4, 5))) static int fail(int r, char *why, size_t why_size,
                                                      const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
        return r;
}

/* procfs and sysfs accept a create or a rename only to fail or do
 * something else entirely; a profile never belongs there. */
static bool on_pseudo_fs(const char *dir)
{
        struct statfs fs;

        if (statfs(dir, &fs) < 0)
                return false;
        return fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC;
}

/* `path` does not exist, but it may be a dangling symlink: follows the
 * chain (bounded) to the name that a write through it would create. */
static int follow_dangling(const char *path, char *out, char *why, size_t why_size)
{
        char current[PATH_MAX], link[PATH_MAX];

        snprintf(current, sizeof(current), "%s", path);
        for (int hop = 0; hop < MAX_LINK_HOPS; hop++) {
                struct stat st;
                ssize_t n;

                if (lstat(current, &st) < 0 || !S_ISLNK(st.st_mode)) {
                        snprintf(out, PATH_MAX, "%s", current);
                        return 0;
                }
                n = readlink(current, link, sizeof(link) - 1);
                if (n < 0)
                        return fail(-errno, why, why_size, "cannot read the symlink %.200s: %s",
                                    current, strerror(errno));
                link[n] = '\0';
                if (link[0] == '/') {
                        snprintf(current, sizeof(current), "%s", link);
                } else {
                        char dir[PATH_MAX];
                        snprintf(dir, sizeof(dir), "%s", current);
                        if (snprintf(current, sizeof(current), "%s/%s", dirname(dir), link) >=
                            (int)sizeof(current))
                                return fail(-ENAMETOOLONG, why, why_size, "path too long");
                }
        }
        return fail(-ELOOP, why, why_size, "too many levels of symbolic links");
}

/* A REPLACE target at `path` (exists as a regular file, or not at all):
 * its directory must exist and be a real one; the result is absolute. */
static int replace_at(const char *path, struct output_target *target, char *why, size_t why_size)
{
        char dir_copy[PATH_MAX], base_copy[PATH_MAX], dir[PATH_MAX];
        const char *base, *given_dir;

        snprintf(dir_copy, sizeof(dir_copy), "%s", path);
        snprintf(base_copy, sizeof(base_copy), "%s", path);
        given_dir = dirname(dir_copy);
        base = basename(base_copy);
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(base, "/") == 0)
                return fail(-EISDIR, why, why_size, "names a directory, not a file");
        if (!realpath(given_dir, dir)) {
                int r = -errno;
                if (r == -ENOENT)
                        return fail(r, why, why_size, "directory %.200s does not exist", given_dir);
                return fail(r, why, why_size, "directory %.200s: %s", given_dir, strerror(-r));
        }
        if (on_pseudo_fs(dir))
                return fail(-EACCES, why, why_size, "directory %.200s is in /proc or /sys", dir);
        target->kind = OUTPUT_KIND_REPLACE;
        if (snprintf(target->path, sizeof(target->path), "%s/%s", strcmp(dir, "/") ? dir : "",
                     base) >= (int)sizeof(target->path))
                return fail(-ENAMETOOLONG, why, why_size, "path too long");
        return 0;
}

int output_target__resolve(const char *path, struct output_target *target, char *why,
                           size_t why_size)
{
        char real[PATH_MAX];
        struct stat st;
        size_t len = path ? strlen(path) : 0;

        if (len == 0)
                return fail(-EINVAL, why, why_size, "empty path");
        if (strcmp(path, "-") == 0) {
                target->kind = OUTPUT_KIND_STDOUT;
                snprintf(target->path, sizeof(target->path), "-");
                return 0;
        }
        if (len >= PATH_MAX)
                return fail(-ENAMETOOLONG, why, why_size, "path too long");
        if (path[len - 1] == '/')
                return fail(-EISDIR, why, why_size, "names a directory, not a file");
        if (stat(path, &st) < 0) {
                if (errno != ENOENT)
                        return fail(-errno, why, why_size, "%s", strerror(errno));
                int r = follow_dangling(path, real, why, why_size);
                return r < 0 ? r : replace_at(real, target, why, why_size);
        }
        if (S_ISDIR(st.st_mode))
                return fail(-EISDIR, why, why_size, "is a directory");
        if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
                target->kind = OUTPUT_KIND_THROUGH;
                snprintf(target->path, sizeof(target->path), "%s", path);
                return 0;
        }
        if (!S_ISREG(st.st_mode))
                return fail(-EINVAL, why, why_size, "is a socket, not a file");
        if (!realpath(path, real))
                return fail(-errno, why, why_size, "%s", strerror(errno));
        return replace_at(real, target, why, why_size);
}

char *output_target__temp_name(const char *path)
{
        _cleanup_free_ char *dir_copy = strdup(path);
        _cleanup_free_ char *base_copy = strdup(path);
        char *result = NULL;

        if (!dir_copy || !base_copy)
                return NULL;
        if (asprintf(&result, "%s/.%s.XXXXXX", dirname(dir_copy), basename(base_copy)) < 0)
                return NULL;
        return result;
}

/* Creates and removes a temp file where the real one will go: the only
 * check that also catches a read-only mount, a full inode table or a
 * root-squashed NFS directory. */
static int probe_directory(const char *path, char *why, size_t why_size)
{
        _cleanup_free_ char *probe = output_target__temp_name(path);
        int fd;

        if (!probe)
                return fail(-ENOMEM, why, why_size, "out of memory");
        fd = mkostemp(probe, O_CLOEXEC);
        if (fd < 0) {
                int r = -errno;
                char *slash = strrchr(probe, '/');
                *slash = '\0';
                return fail(r, why, why_size, "cannot create files in %.200s: %s",
                            *probe ? probe : "/", strerror(-r));
        }
        (void)unlink(probe);
        (void)close(fd);
        return 0;
}

int output_target__check(const char *path, char *why, size_t why_size)
{
        struct output_target target;
        int r = output_target__resolve(path, &target, why, why_size);
        int flags;

        if (r < 0)
                return r;
        switch (target.kind) {
        case OUTPUT_KIND_REPLACE:
                return probe_directory(target.path, why, why_size);
        case OUTPUT_KIND_THROUGH:
                if (access(target.path, W_OK) < 0)
                        return fail(-errno, why, why_size, "%s", strerror(errno));
                return 0;
        case OUTPUT_KIND_STDOUT:
                flags = fcntl(STDOUT_FILENO, F_GETFL);
                if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
                        return fail(-EBADF, why, why_size,
                                    "standard output is not open for writing");
                return 0;
        }
        return 0;
}

static bool usable_tmpdir(const char *dir)
{
        struct stat st;

        return dir && dir[0] == '/' && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
               access(dir, W_OK | X_OK) == 0;
}

int output_target__fallback(const char *suffix, char *path, size_t path_size)
{
        const char *dirs[] = {getenv("TMPDIR"), "/tmp"};
        int r = -ENOENT;

        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
                char name[PATH_MAX];
                int fd;

                if (!usable_tmpdir(dirs[i]))
                        continue;
                if (snprintf(name, sizeof(name), "%s/splunk-profd-%ld-XXXXXX%s", dirs[i],
                             (long)getpid(), suffix) >= (int)sizeof(name))
                        continue;
                /* mkostemps: O_EXCL with a fresh random name, never an old file. */
                fd = mkostemps(name, (int)strlen(suffix), O_CLOEXEC);
                if (fd < 0) {
                        r = -errno;
                        continue;
                }
                (void)close(fd);
                if (snprintf(path, path_size, "%s", name) >= (int)path_size) {
                        (void)unlink(name);
                        return -ENAMETOOLONG;
                }
                return 0;
        }
        return r;
}
