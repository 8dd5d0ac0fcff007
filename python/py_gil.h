/* py_gil.h — which thread state holds the GIL, read with the thread's own
 * stop-window copy. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/py_runtime.h"

#define PY_GIL_REGION_MAX 32 /* bytes copied per capture */

enum py_gil_state {
        PY_GIL_UNKNOWN = -1,
        PY_GIL_NOT_HELD = 0,
        PY_GIL_HELD = 1,
};

/* After the resume (thread-list refresh): the address of the bytes to copy
 * for threads of interpreter `interp`, or 0 when this version or runtime
 * does not tell.  3.12 reads interp->ceval.gil (one read). */
uint64_t py_gil__region(pid_t pid, const struct py_runtime *runtime, uint64_t interp);

/* Bytes to copy at that address (0 when the model is PY_GIL_NONE). */
size_t py_gil__region_len(const struct py_offsets *offsets);

/* Does `tstate` hold the GIL, given `len` bytes copied from its region?
 * Pure: no target access. */
enum py_gil_state py_gil__holder_is(const struct py_offsets *offsets, const uint8_t *region,
                                    size_t len, uint64_t tstate);
