/* py_frame_copy.c — the frames that must be copied in the stop window.
 *
 * Why: the stop window copies the thread state and its current data-stack
 * chunk (3.11+) or its top frame object (3.9/3.10); the rest of the frame
 * chain used to be read live after the resume.  A generator's or
 * coroutine's frame lives in its heap object, not in the chunk, and when
 * it yields CPython clears its link to the caller (3.11+ `previous`,
 * 3.9/3.10 `f_back`).  An asyncio task switching every 20 µs has almost
 * always yielded by the time the walk reads its frame: the walk then ends
 * at the coroutine, while the native stack still has the interpreter loops
 * below it, and the merge fails (`spin <- small_task <- [merge failed]`,
 * 85% of the samples of 50 such tasks, measured on 3.9 to 3.14).  The same
 * happens inside a generator-based context manager.
 *
 * How: right after the registers and stack were copied, still in the stop
 * window, the chain is followed from the top frame.  A frame the chunk
 * copy, the native stack copy (3.12+ entry frames) or an earlier region
 * holds costs a lookup; any other one is copied as a region of its own
 * with one process_vm_readv, so the walk after the resume finds the chain
 * as it was at the stop.  At most PY_FRAME_COPY_MAX frames are read so
 * (bounded stop window; on 3.11+ they are the running task's await chain,
 * on 3.9/3.10 every frame object); beyond that, and beyond PY_MAX_FRAMES
 * steps, frames are read live after the resume as before. */
#include "python/py_frame_copy.h"

#include <string.h>

#include "python/py_frame.h"

/* The frame's `previous` word from the copies, or false when none holds
 * all of the frame (the native stack copy: 3.12+ entry frames). */
static bool copied_previous(const struct py_offsets *o, const struct capture *capture,
                            uint64_t frame, uint64_t *previous)
{
        const uint8_t *copy = capture__interp_at(capture, frame, o->frame_size);
        uint64_t first, last;

        if (copy) {
                memcpy(previous, copy + o->frame_previous, sizeof(*previous));
                return true;
        }
        return capture__read_word(capture, frame, &first) &&
               capture__read_word(capture, frame + o->frame_size - 8, &last) &&
               capture__read_word(capture, frame + o->frame_previous, previous);
}

size_t py_frame_copy__chain(const struct py_runtime *runtime, struct capture *capture, uint64_t top)
{
        const struct py_offsets *o = runtime->offsets;
        size_t copied = 0, len = o->frame_size;
        uint64_t frame = top;

        for (size_t steps = 0; frame && steps < PY_MAX_FRAMES; steps++) {
                uint64_t previous;
                if (frame < 4096 || (frame & 7))
                        break;
                if (!copied_previous(o, capture, frame, &previous)) {
                        const uint8_t *copy;
                        if (copied >= PY_FRAME_COPY_MAX ||
                            capture->interp.n_regions >= CAPTURE_INTERP_REGIONS ||
                            capture__copy_interp(capture, &frame, &len, 1) < (ssize_t)len)
                                break;
                        copied++;
                        copy = capture__interp_at(capture, frame, o->frame_size);
                        if (!copy)
                                break;
                        memcpy(&previous, copy + o->frame_previous, sizeof(previous));
                }
                frame = previous;
        }
        return copied;
}

size_t py_frame_copy__bytes(const struct py_offsets *offsets)
{
        return PY_FRAME_COPY_MAX * offsets->frame_size;
}
