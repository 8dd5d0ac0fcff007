/* registry_setup.h — builds and tears down the run-wide registry
 * (engine/registry.h) for one command: its eventfds, caches, the profile
 * builder (record with --output only) and, for --watch, the watcher. */
#pragma once

#include "engine/config.h"
#include "engine/registry.h"

/* 0, or -errno; either way the registry is then released (a failed init
 * leaves a half-built registry that release accepts). */
int registry__init(struct registry *registry, const struct profd_config *config);
/* Frees everything init or the run created; accepts a half-built one. */
void registry__release(struct registry *registry);
