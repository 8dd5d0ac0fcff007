/* syscall_names.h — names of x86-64 system calls ("read", "futex", ...). */
#pragma once

#include <stddef.h>

/* The name of syscall `nr`, or "syscall_N" written into `buffer` when the
 * table does not know it (a newer kernel).  `buffer` should hold 32 bytes. */
const char *syscall_names__get(long nr, char *buffer, size_t size);
