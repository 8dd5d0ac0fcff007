/* target_file.h — opening files as the target process sees them. */
#pragma once

#include <sys/types.h>

#include "symbolize/proc_maps.h"

/* Opens the regular file behind a file mapping of `pid`: by path under
 * /proc/PID/root if that is the mapped inode itself (no lock of the
 * target taken), else through /proc/PID/map_files (exactly the mapped
 * inode, even if deleted or in another mount namespace; takes the
 * target's mmap lock), else by path even if the inode differs (overlay
 * filesystems).  Returns an O_CLOEXEC read-only fd or -errno. */
int target_file__open_mapping(pid_t pid, const struct proc_map *map);
/* Opens `path` (absolute, as the target sees it) under /proc/PID/root,
 * resolving symlinks inside that root.  Returns an fd or -errno. */
int target_file__open_in_root(pid_t pid, const char *path);
