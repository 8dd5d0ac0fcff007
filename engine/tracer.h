/* tracer.h — the tracer thread: the only thread that makes ptrace calls
 * (Linux accepts requests on a tracee only from the thread that attached
 * it), and the thread whose exit releases every tracee. */
#pragma once

#include "engine/registry.h"

/* pthread entry point; `arg` is the registry.  Signals done_fd with 1 once
 * every target is attached, then with 2 when it finishes, after which it
 * has exited and the kernel has detached every thread without stopping
 * it.  On an attach failure it fills attach_error/attach_why and finishes
 * at once. */
void *tracer__main(void *arg);

/* Job control (cli/main.c): after the tracer thread has exited, every
 * tracee is released already; this frees what the engine still knows of
 * them, so that a new tracer__main attaches afresh (registry->resuming).
 * Watch mode forgets what it discovered too.  Main thread, tracer joined. */
void tracer__forget_targets(struct registry *registry);

/* One warning line when the run missed BEHIND_WARN_PERCENT of its ticks or
 * more, saying by how much.  Called by main after joining the tracer, once
 * the terminal is its own again (top's screen, the progress line). */
void tracer__warn_if_behind(const struct registry *registry);
