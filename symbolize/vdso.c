/* vdso.c — making the vDSO a module like any other.
 *
 * Hot code calls clock_gettime and gettimeofday, which run in the vDSO: a
 * small ELF image the kernel maps into every process without a file behind
 * it.  Without a module for it, samples there have no name and, worse, the
 * unwinder has no CFI to step out of it, so the whole stack is lost.  The
 * image is read from /proc/PID/mem (size-capped) into a memfd, which
 * libdwfl can then open and own like any mapped file; its build-id keys the
 * caches as for any other file. */
#include "symbolize/vdso.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/cleanup.h"

bool proc_map__is_vdso(const struct proc_map *map)
{
        return strcmp(map->path, VDSO_NAME) == 0;
}

static int vdso__read(pid_t pid, const struct proc_map *map, void *buf, size_t size)
{
        _cleanup_close_ int mem = -1;
        char path[64];
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
        mem = open(path, O_RDONLY | O_CLOEXEC);
        if (mem < 0)
                return -errno;
        n = pread(mem, buf, size, (off_t)map->start);
        if (n < 0)
                return -errno;
        return (size_t)n == size ? 0 : -EIO;
}

static int fd__write_all(int fd, const char *buf, size_t size)
{
        while (size > 0) {
                ssize_t n = write(fd, buf, size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                buf += n;
                size -= (size_t)n;
        }
        return 0;
}

int vdso__open(pid_t pid, const struct proc_map *map)
{
        size_t size = map->limit - map->start;
        _cleanup_free_ char *image = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        if (size == 0 || size > VDSO_MAX_SIZE)
                return -EFBIG;
        image = malloc(size);
        if (!image)
                return -ENOMEM;
        r = vdso__read(pid, map, image, size);
        if (r < 0)
                return r;
        fd = memfd_create("profd-vdso", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = fd__write_all(fd, image, size);
        if (r < 0)
                return r;
        return take_fd(fd);
}
