/* subprocesses.h — --subprocesses outside watch mode: the children of the
 * named processes (or of the launched COMMAND) are targets of their own,
 * each with its own process.pid.  Those that exist at the start are found
 * in /proc; those forked later are attached by the kernel (the roots are
 * seized with follow_forks) and reported through on_fork.
 *
 * Also the launched COMMAND's start: it is seized before its exec and let
 * go here, so its first instruction is already traced.  Tracer thread. */
#pragma once

#include "engine/registry.h"

/* Seizes every current descendant of `root` that is not a target yet; one
 * that cannot be profiled costs a warning, not the run. */
void subprocesses__attach_existing(struct registry *registry, pid_t root);

/* on_fork: makes `child` (already ours, stopped or about to stop) a
 * target; it is prepared by subprocesses__prepare_pending. */
void subprocesses__on_fork(struct registry *registry, struct target *parent, pid_t child);

/* Sets up every live target that is not yet (new children, and targets
 * that executed a new program). */
void subprocesses__prepare_pending(struct registry *registry);

/* Lets the seized COMMAND exec (registry->command.go_fd) and waits, up to
 * a few seconds, for its exec stop or its exit. */
void subprocesses__start_command(struct registry *registry, struct target *target);
