/* remote_memory.c — see remote_memory.h.
 *
 * process_vm_readv() stops at the first page it cannot read and returns the
 * bytes read so far, which is exactly what a stack copy wants: the stack
 * ends at an unmapped guard page, and a short copy is still useful. */
#include "attach/remote_memory.h"

#include <errno.h>
#include <sys/uio.h>

ssize_t remote_memory__read(pid_t pid, uint64_t address, void *buffer, size_t len)
{
        struct iovec local = {.iov_base = buffer, .iov_len = len};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)address, .iov_len = len};
        ssize_t n;

        if (len > REMOTE_READ_MAX)
                local.iov_len = remote.iov_len = REMOTE_READ_MAX;
        if (address == 0 || address + local.iov_len < address)
                return -EFAULT;
        n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0)
                return -errno;
        return n;
}
