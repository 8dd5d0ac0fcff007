/* profile_file.c — puts a finished profile on disk atomically.
 *
 * Profiles are picked up by other programs (an OpenTelemetry collector,
 * a user running pprof) while the daemon keeps writing new ones, often
 * to the same path.  Writing in place would let a reader see a truncated
 * file, and a crash mid-write would destroy the previous profile.  So the
 * bytes go to a hidden temp file in the same directory (rename is only
 * atomic within one file system), are fsync'ed, and the temp file is
 * renamed over the target; any failure unlinks the temp file and leaves
 * the old one alone.  The directory is fsync'ed too, best effort, so the
 * rename itself survives a crash.
 *
 * That is for a regular file or a new name only (pprof/output_target.h):
 * a device, a FIFO or "-" (standard output) is written through, and a
 * symlink is followed to the file it names, which is replaced in its own
 * directory; the link stays.
 *
 * mkstemp creates the file 0600; it is widened to 0644, the mode a plain
 * creat() would give under the usual umask, so that a collector running
 * as another user can read it. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/gzip.h"
#include "pprof/profile_builder.h"
#include "pprof/output_target.h"
#include "pprof/profile_file.h"
#include "util/cleanup.h"

#define PROFILE_FILE_MODE 0644

static int profile_file__write_all(int fd, const uint8_t *data, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, data, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

static int profile_file__fill(int fd, const uint8_t *data, size_t len)
{
        int r = profile_file__write_all(fd, data, len);

        if (r < 0)
                return r;
        if (fchmod(fd, PROFILE_FILE_MODE) < 0 || fsync(fd) < 0)
                return -errno;
        return 0;
}

static void profile_file__sync_dir(const char *path)
{
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int fd = -1;

        if (!copy)
                return;
        fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                (void)fsync(fd);
}

/* Temp file next to `path`, fsync, rename over it. */
static int profile_file__replace(const char *path, const uint8_t *data, size_t len)
{
        _cleanup_free_ char *temp = output_target__temp_name(path);
        _cleanup_close_ int fd = -1;
        int r;

        if (!temp)
                return -errno;
        fd = mkostemp(temp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = profile_file__fill(fd, data, len);
        if (r >= 0 && close(take_fd(fd)) < 0)
                r = -errno;
        if (r >= 0 && rename(temp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlink(temp);
                return r;
        }
        profile_file__sync_dir(path);
        return 0;
}

/* A device or FIFO: opened without blocking, so a FIFO nobody reads
 * fails at once (ENXIO) instead of hanging the end of the run; the
 * writes themselves then block as usual while the reader drains. */
static int profile_file__write_through(const char *path, const uint8_t *data, size_t len)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        int flags;

        if (fd < 0)
                return -errno;
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return -errno;
        return profile_file__write_all(fd, data, len);
}

int profile_file__write_bytes(const char *path, const uint8_t *data, size_t len)
{
        struct output_target target;
        char why[512];
        int r;

        if (!path || !*path || (!data && len))
                return -EINVAL;
        r = output_target__resolve(path, &target, why, sizeof(why));
        if (r < 0)
                return r;
        switch (target.kind) {
        case OUTPUT_KIND_STDOUT:
                return profile_file__write_all(STDOUT_FILENO, data, len);
        case OUTPUT_KIND_THROUGH:
                return profile_file__write_through(target.path, data, len);
        case OUTPUT_KIND_REPLACE:
                break;
        }
        return profile_file__replace(target.path, data, len);
}

int profile_file__write_pprof(struct profile_builder *builder, const char *path)
{
        _cleanup_free_ uint8_t *encoded = NULL;
        _cleanup_free_ uint8_t *compressed = NULL;
        size_t encoded_len, compressed_len;
        int r;

        r = profile_builder__encode(builder, &encoded, &encoded_len);
        if (r < 0)
                return r;
        r = gzip__compress(encoded, encoded_len, &compressed, &compressed_len);
        if (r < 0)
                return r;
        free(take_ptr(encoded)); /* halve the peak before the write */
        return profile_file__write_bytes(path, compressed, compressed_len);
}
