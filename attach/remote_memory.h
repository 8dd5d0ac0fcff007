/* remote_memory.h — bounded reads of another process's memory.
 *
 * Every read of target memory goes through here: one process_vm_readv()
 * per call, a hard cap on length, and a result that says how many bytes
 * really arrived, because a copy that runs into an unmapped page stops
 * short instead of failing. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REMOTE_READ_MAX (8u << 20)

/* Copies up to `len` bytes from `address` in `pid`.  Returns the number of
 * bytes copied (possibly short), or -errno when nothing could be read. */
ssize_t remote_memory__read(pid_t pid, uint64_t address, void *buffer, size_t len);
