/* vdso.h — the target's vDSO as a file libdwfl can open. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "symbolize/proc_maps.h"

#define VDSO_NAME     "[vdso]"
#define VDSO_MAX_SIZE (1u << 20)

bool proc_map__is_vdso(const struct proc_map *map);
/* Copies the vDSO mapping of `pid` into a memfd.  Returns the fd or -errno. */
int vdso__open(pid_t pid, const struct proc_map *map);
