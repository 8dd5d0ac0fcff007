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

/* How many hint frames are prefetched: on 3.9/3.10 every frame object of
 * the chain needs a copy of its own; on 3.11+ only generator and coroutine
 * frames do. */
static size_t prefetch_max(const struct py_offsets *o)
{
        return o->model == PY_FRAMES_OBJECTS ? PY_FRAME_PREFETCH_MAX : PY_FRAME_COPY_MAX;
}

static bool region_holds(const struct py_offsets *o, const struct capture_region *r, uint64_t frame)
{
        return frame >= r->address && r->len >= o->frame_size &&
               frame - r->address <= r->len - o->frame_size;
}

/* The region holding all of the frame, or -1.  `guess` is tried first:
 * the hint is in chain order, so the next frame is mostly in the region
 * after the one that held the last (a scan of ~150 regions per frame of
 * a 60-deep chain would lengthen the stop window). */
static long region_of(const struct py_offsets *o, const struct capture_interp *interp,
                      uint64_t frame, size_t guess)
{
        if (guess < interp->n_regions && region_holds(o, &interp->regions[guess], frame))
                return (long)guess;
        for (size_t i = 0; i < interp->n_regions; i++)
                if (region_holds(o, &interp->regions[i], frame))
                        return (long)i;
        return -1;
}

/* The frames copied on their own at this thread's last stops, the first
 * `n` of the hint, in one process_vm_readv: a loop's outer frames stay
 * the same from one stop to the next, and 3.9/3.10 reuse frame objects
 * LIFO (each code object's zombie frame, then the free list), so a
 * recursion that goes 60 deep and back keeps using the same 60 objects.
 * A short read keeps what arrived.  Returns the regions appended: those
 * of hint->frames[0..returned). */
static size_t prefetch(const struct py_offsets *o, const struct py_frame_hint *hint, size_t n,
                       struct capture *capture)
{
        size_t lens[PY_FRAME_PREFETCH_MAX], first = capture->interp.n_regions;

        if (n > CAPTURE_INTERP_REGIONS - first)
                n = CAPTURE_INTERP_REGIONS - first;
        for (size_t i = 0; i < n; i++)
                lens[i] = o->frame_size;
        if (n)
                (void)capture__copy_interp(capture, hint->frames, lens, n);
        return capture->interp.n_regions - first;
}

/* The frame's `previous` word: from a region (own says whether the region
 * is the frame's own, worth prefetching next time; *region its index),
 * from the native stack copy (3.12+ entry frames), or copied now on its
 * own when `may_copy`.  False when none holds it. */
static bool previous_of(const struct py_offsets *o, struct capture *capture, uint64_t frame,
                        bool may_copy, size_t *guess, long *region, bool *own, uint64_t *previous)
{
        const struct capture_interp *interp = &capture->interp;
        size_t len = o->frame_size;
        uint64_t first, last;

        *own = false;
        *region = region_of(o, interp, frame, *guess);
        if (*region < 0 && capture__read_word(capture, frame, &first) &&
            capture__read_word(capture, frame + o->frame_size - 8, &last) &&
            capture__read_word(capture, frame + o->frame_previous, previous))
                return true;
        if (*region < 0) {
                if (!may_copy || interp->n_regions >= CAPTURE_INTERP_REGIONS ||
                    capture__copy_interp(capture, &frame, &len, 1) < (ssize_t)len)
                        return false;
                *region = (long)interp->n_regions - 1;
        }
        const struct capture_region *r = &interp->regions[*region];
        memcpy(previous, interp->buffer + r->offset + (frame - r->address) + o->frame_previous,
               sizeof(*previous));
        *own = r->address == frame && r->len == o->frame_size;
        *guess = (size_t)*region + 1;
        return true;
}

size_t py_frame_copy__chain(struct py_frame_copy *fc, const struct py_runtime *runtime,
                            struct capture *capture, uint64_t top)
{
        const struct py_offsets *o = runtime->offsets;
        struct py_frame_hint *hint = &fc->hints[(uint32_t)capture->tid % PY_FRAME_HINTS];
        struct py_frame_hint next = {.tid = capture->tid};
        bool used[PY_FRAME_PREFETCH_MAX] = {false};
        size_t max = prefetch_max(o), asked = 0, fetched = 0, copied = 0;
        size_t first = capture->interp.n_regions, guess = first;
        uint64_t frame = top;

        if (hint->tid == capture->tid) {
                asked = hint->n < max ? hint->n : max;
                fetched = prefetch(o, hint, asked, capture);
        }
        for (size_t steps = 0; frame && steps < PY_MAX_FRAMES; steps++) {
                size_t before = capture->interp.n_regions;
                uint64_t previous;
                long region;
                bool own;
                if (frame < 4096 || (frame & 7) ||
                    !previous_of(o, capture, frame, copied < PY_FRAME_COPY_MAX, &guess, &region,
                                 &own, &previous))
                        break;
                copied += capture->interp.n_regions > before;
                if (region >= (long)first && (size_t)region < first + fetched)
                        used[(size_t)region - first] = true;
                if (own && next.n < max)
                        next.frames[next.n++] = frame;
                frame = previous;
        }
        /* Then the frames prefetched whole that this chain did not use:
         * a recursion deeper than the current one will use them again.
         * Those not read (unmapped, or no room) are forgotten. */
        for (size_t i = 0; i < fetched && next.n < max; i++) {
                const struct capture_region *r = &capture->interp.regions[first + i];
                if (!used[i] && r->len == o->frame_size)
                        next.frames[next.n++] = hint->frames[i];
        }
        *hint = next;
        return copied;
}

size_t py_frame_copy__bytes(const struct py_offsets *offsets)
{
        /* prefetched and copied */
        return (prefetch_max(offsets) + PY_FRAME_COPY_MAX) * offsets->frame_size;
}
