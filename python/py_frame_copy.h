/* py_frame_copy.h — inside the stop window, the Python frames of a thread
 * that its chunk and stack copies do not hold. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attach/capture.h"
#include "python/py_runtime.h"

/* Frames copied one by one per sample, at most (each one process_vm_readv
 * of frame_size bytes, ~1 µs): generator and coroutine frames (one per
 * await level of the running task) and, on 3.9/3.10, the frame objects. */
#define PY_FRAME_COPY_MAX 16

/* 3.9/3.10: frame objects remembered per thread and prefetched at its next
 * stop in one process_vm_readv (112 bytes each: 14 KiB of the thread's
 * interpreter buffer).  3.11+ prefetch at most PY_FRAME_COPY_MAX (their
 * chain is in the chunk but for generator and coroutine frames). */
#define PY_FRAME_PREFETCH_MAX 128

#define PY_FRAME_HINTS 64 /* threads whose last frames are remembered (by tid) */

/* The frames one thread needed copied on their own at its last stops:
 * those of its last chain first (leaf first), then older ones that still
 * read, as long as there is room. */
struct py_frame_hint {
        pid_t tid;
        size_t n;
        uint64_t frames[PY_FRAME_PREFETCH_MAX];
};

/* Per process (64 KiB): zeroed, it holds no hint. */
struct py_frame_copy {
        struct py_frame_hint hints[PY_FRAME_HINTS];
};

/* Inside the stop window, after the registers and the native stack were
 * copied: copies the frames of the thread's hint (at most
 * PY_FRAME_PREFETCH_MAX on 3.9/3.10, else PY_FRAME_COPY_MAX) in one read, then follows
 * the frame chain from `top` (py_frame__top) through the copies and
 * appends each frame none of them holds to the interpreter copy, until the
 * chain ends, PY_FRAME_COPY_MAX frames were read or the capture has no
 * region or buffer room left; the frames that needed a region of their
 * own become the hint.  No allocation.  Returns the frames read one by
 * one. */
size_t py_frame_copy__chain(struct py_frame_copy *fc, const struct py_runtime *runtime,
                            struct capture *capture, uint64_t top);

/* Interpreter-buffer bytes py_frame_copy__chain may append. */
size_t py_frame_copy__bytes(const struct py_offsets *offsets);
