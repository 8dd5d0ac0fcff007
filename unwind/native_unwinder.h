/* native_unwinder.h — native stacks from captures, after the thread has
 * been resumed.
 *
 * Built on libdwfl's dwfl_attach_state(): our callbacks hand libdwfl the
 * captured registers and serve stack memory from the captured copy only,
 * and libdwfl applies the CFI (.eh_frame/.debug_frame) of the modules the
 * address space reported.  A read outside the copy ends the walk, and the
 * stack is then marked truncated. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "attach/capture.h"
#include "attach/target.h"

struct address_space;
struct native_unwinder;

/* Attaches the unwinder to the address space's Dwfl.  NULL on failure. */
struct native_unwinder *native_unwinder__new(struct address_space *space, pid_t pid);
void native_unwinder__free(struct native_unwinder *unwinder);

/* Unwinds `capture` into `out` (at most `max_depth` frames, leaf first,
 * return addresses already moved back into their call instruction; when
 * out->sps is set, each frame's stack pointer, 0 when unknown).
 * Returns the number of frames. */
size_t native_unwinder__unwind(struct native_unwinder *unwinder, const struct capture *capture,
                               struct thread_stack *out, size_t max_depth);
