/* py_frame_copy.h — inside the stop window, the Python frames of a thread
 * that its chunk and stack copies do not hold. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attach/capture.h"
#include "python/py_runtime.h"

/* Frames copied one by one per sample, at most (each one process_vm_readv
 * of frame_size bytes, ~1 µs): on 3.9/3.10 the frame objects,
 * PY_FRAME_COPY_MAX (plus one per range not prefetched); on 3.11+ the
 * generator and coroutine frames, one per await level of the running
 * task, PY_CORO_COPY_MAX.  A FastAPI endpoint under uvicorn is 19 levels
 * deep (FastAPI 0.143, Starlette 1.9: the middleware stack): with 16, its
 * outer levels were read after the resume, and 0.1-0.6% of its samples
 * were [merge failed] (the task had yielded meanwhile). */
#define PY_FRAME_COPY_MAX 16
#define PY_CORO_COPY_MAX  32

/* Frame addresses remembered per thread: on 3.9/3.10 the frame objects
 * of its last chains (CPython reuses them LIFO), on 3.11+ at most
 * PY_CORO_COPY_MAX generator and coroutine frames. */
#define PY_FRAME_PREFETCH_MAX 128
/* They are read at the next stop in one process_vm_readv as up to
 * PY_FRAME_RANGES ranges, frames less than PY_FRAME_GAP bytes apart in
 * one range (pymalloc packs frame objects of a size into the same pools;
 * each iovec costs ~0.7 us, 128 of them ~90 us: measured), at most
 * PY_FRAME_PREFETCH_BYTES in all (of the thread's interpreter buffer). */
#define PY_FRAME_RANGES         32
#define PY_FRAME_GAP            512
#define PY_FRAME_PREFETCH_BYTES 32768

#define PY_FRAME_HINTS 64 /* threads whose last frames are remembered (by tid) */

struct py_frame_range {
        uint64_t address;
        size_t len;
};

/* The frames one thread needed copied on their own at its last stops:
 * those of its last chain first (leaf first), then older ones that still
 * read, as long as there is room; and the ranges that read them, planned
 * after the resume (py_frame_copy__plan). */
struct py_frame_hint {
        pid_t tid;
        size_t n, n_ranges;
        uint64_t frames[PY_FRAME_PREFETCH_MAX];
        struct py_frame_range ranges[PY_FRAME_RANGES];
};

/* Per process (~100 KiB): zeroed, it holds no hint. */
struct py_frame_copy {
        struct py_frame_hint hints[PY_FRAME_HINTS];
};

/* Inside the stop window, after the registers and the native stack were
 * copied: copies the ranges of the thread's hint in one read, then follows
 * the frame chain from `top` (py_frame__top) through the copies and
 * appends each frame none of them holds to the interpreter copy, until the
 * chain ends, PY_CORO_COPY_MAX frames were read (3.9/3.10:
 * PY_FRAME_COPY_MAX plus the ranges not prefetched, PY_FRAME_COPY_MAX +
 * PY_FRAME_RANGES with none)
 * or the capture has no
 * region or buffer room left; the frames that needed a region of their
 * own (and older ones) become the hint, its ranges not planned yet.  No
 * allocation.  Returns the frames read one by one. */
size_t py_frame_copy__chain(struct py_frame_copy *fc, const struct py_runtime *runtime,
                            struct capture *capture, uint64_t top);

/* After the resume, before the thread's next stop: turns its hint's
 * frames into ranges (sorted, close ones joined, bounded). */
void py_frame_copy__plan(struct py_frame_copy *fc, pid_t tid, const struct py_offsets *offsets);

/* Interpreter-buffer bytes py_frame_copy__chain may append. */
size_t py_frame_copy__bytes(const struct py_offsets *offsets);
