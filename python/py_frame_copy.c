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
 * steps, frames are read live after the resume as before.
 *
 * Before the walk, the frames this thread needed copied on their own at
 * its last stop are copied again in one process_vm_readv (a per-thread
 * hint): on 3.9/3.10 an event loop's outer frame objects stay the same
 * from one stop to the next, so only the running task's frames then cost
 * a read of their own (3.9, 50 switching tasks: the frame copy held the
 * thread ~15 us longer without the hint, measured). */
#include "python/py_frame_copy.h"

#include <string.h>

#include "python/py_frame.h"

/* Where the frame's bytes are copied: *own is set when it is a region
 * of its own (copied one by one, or prefetched), whose address is worth
 * prefetching at the next stop.  NULL when no copy holds it. */
static const uint8_t *copied_frame(const struct py_offsets *o, const struct capture *capture,
                                   uint64_t frame, bool *own)
{
        const struct capture_interp *interp = &capture->interp;

        *own = false;
        for (size_t i = 0; i < interp->n_regions; i++) {
                const struct capture_region *r = &interp->regions[i];
                if (frame >= r->address && r->len >= o->frame_size &&
                    frame - r->address <= r->len - o->frame_size) {
                        *own = r->address == frame && r->len == o->frame_size;
                        return interp->buffer + r->offset + (frame - r->address);
                }
        }
        return NULL;
}

/* The frame's `previous` word from the copies, or false when none holds
 * all of the frame (the native stack copy: 3.12+ entry frames). */
static bool copied_previous(const struct py_offsets *o, const struct capture *capture,
                            uint64_t frame, uint64_t *previous, bool *own)
{
        const uint8_t *copy = copied_frame(o, capture, frame, own);
        uint64_t first, last;

        if (copy) {
                memcpy(previous, copy + o->frame_previous, sizeof(*previous));
                return true;
        }
        return capture__read_word(capture, frame, &first) &&
               capture__read_word(capture, frame + o->frame_size - 8, &last) &&
               capture__read_word(capture, frame + o->frame_previous, previous);
}

/* The frames copied on their own at this thread's last stop, in one
 * process_vm_readv: a loop's outer frames (3.9/3.10 frame objects, which
 * CPython reuses per code object) are mostly the same from one stop to
 * the next.  A short read keeps what arrived. */
static void prefetch(const struct py_offsets *o, const struct py_frame_hint *hint,
                     struct capture *capture)
{
        size_t lens[PY_FRAME_COPY_MAX], n = hint->n;

        if (n > CAPTURE_INTERP_REGIONS - capture->interp.n_regions)
                n = CAPTURE_INTERP_REGIONS - capture->interp.n_regions;
        for (size_t i = 0; i < n; i++)
                lens[i] = o->frame_size;
        if (n)
                (void)capture__copy_interp(capture, hint->frames, lens, n);
}

size_t py_frame_copy__chain(struct py_frame_copy *fc, const struct py_runtime *runtime,
                            struct capture *capture, uint64_t top)
{
        const struct py_offsets *o = runtime->offsets;
        struct py_frame_hint *hint = &fc->hints[(uint32_t)capture->tid % PY_FRAME_HINTS];
        struct py_frame_hint next = {.tid = capture->tid};
        size_t copied = 0, len = o->frame_size;
        uint64_t frame = top;

        if (hint->tid == capture->tid)
                prefetch(o, hint, capture);
        for (size_t steps = 0; frame && steps < PY_MAX_FRAMES; steps++) {
                uint64_t previous;
                bool own;
                if (frame < 4096 || (frame & 7))
                        break;
                if (!copied_previous(o, capture, frame, &previous, &own)) {
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
                        own = true;
                }
                if (own && next.n < PY_FRAME_COPY_MAX)
                        next.frames[next.n++] = frame;
                frame = previous;
        }
        *hint = next;
        return copied;
}

size_t py_frame_copy__bytes(const struct py_offsets *offsets)
{
        return 2 * PY_FRAME_COPY_MAX * offsets->frame_size; /* prefetched and copied */
}
