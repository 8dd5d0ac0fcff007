/* target_file.h — opening files as the target process sees them. */
#pragma once

#include <sys/types.h>

#include "symbolize/proc_maps.h"

/* Opens the regular file behind a file mapping of `pid`: first through
 * /proc/PID/map_files (exactly the mapped inode, even if deleted or in
 * another mount namespace), then by path under /proc/PID/root.  Returns an
 * O_CLOEXEC read-only fd or -errno. */
int target_file__open_mapping(pid_t pid, const struct proc_map *map);
/* Opens `path` (absolute, as the target sees it) under /proc/PID/root,
 * resolving symlinks inside that root.  Returns an fd or -errno. */
int target_file__open_in_root(pid_t pid, const char *path);
