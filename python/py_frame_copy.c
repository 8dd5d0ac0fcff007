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
 * as it was at the stop.  At most PY_CORO_COPY_MAX frames are read so
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

/* How many frames a hint keeps, and how many bytes its ranges read: on
 * 3.9/3.10 every frame object of the chain needs a copy of its own; on
 * 3.11+ only generator and coroutine frames do. */
static size_t prefetch_max(const struct py_offsets *o)
{
        return o->model == PY_FRAMES_OBJECTS ? PY_FRAME_PREFETCH_MAX : PY_CORO_COPY_MAX;
}

static size_t prefetch_bytes(const struct py_offsets *o)
{
        return o->model == PY_FRAMES_OBJECTS ? PY_FRAME_PREFETCH_BYTES
                                             : PY_CORO_COPY_MAX * o->frame_size;
}

/* Frames copied one by one, at most, before the ranges' bonus (3.9/3.10). */
static size_t copy_max(const struct py_offsets *o)
{
        return o->model == PY_FRAMES_OBJECTS ? PY_FRAME_COPY_MAX : PY_CORO_COPY_MAX;
}

static bool region_holds(const struct py_offsets *o, const struct capture_region *r, uint64_t frame)
{
        return frame >= r->address && r->len >= o->frame_size &&
               frame - r->address <= r->len - o->frame_size;
}

/* Regions [first, first + n) are the prefetched ranges, in address order. */
struct prefetched {
        size_t first, n;
};

/* The prefetched region holding all of the frame (binary search), or -1. */
static long prefetched_region(const struct py_offsets *o, const struct capture_interp *interp,
                              const struct prefetched *p, uint64_t frame)
{
        size_t lo = p->first, hi = p->first + p->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (frame < interp->regions[mid].address)
                        hi = mid;
                else if (region_holds(o, &interp->regions[mid], frame))
                        return (long)mid;
                else
                        lo = mid + 1;
        }
        return -1;
}

/* The region holding all of the frame, or -1: the prefetched ranges by
 * binary search, the few others (thread state, chunk, top frame, frames
 * copied one by one) in turn. */
static long region_of(const struct py_offsets *o, const struct capture_interp *interp,
                      const struct prefetched *p, uint64_t frame)
{
        long r = prefetched_region(o, interp, p, frame);

        for (size_t i = 0; r < 0 && i < interp->n_regions; i++)
                if ((i < p->first || i >= p->first + p->n) &&
                    region_holds(o, &interp->regions[i], frame))
                        r = (long)i;
        return r;
}

/* The ranges planned at this thread's last resume, in one
 * process_vm_readv: a loop's outer frames stay the same from one stop to
 * the next, and 3.9/3.10 reuse frame objects LIFO (each code object's
 * zombie frame, then the free list), so a recursion that goes 60 deep and
 * back keeps using the same 60 objects.  A short read keeps what
 * arrived. */
static struct prefetched prefetch(const struct py_frame_hint *hint, struct capture *capture)
{
        uint64_t addresses[PY_FRAME_RANGES];
        size_t lens[PY_FRAME_RANGES], n = hint->n_ranges;
        struct prefetched p = {.first = capture->interp.n_regions};

        if (n > CAPTURE_INTERP_REGIONS - p.first)
                n = CAPTURE_INTERP_REGIONS - p.first;
        for (size_t i = 0; i < n; i++) {
                addresses[i] = hint->ranges[i].address;
                lens[i] = hint->ranges[i].len;
        }
        if (n)
                (void)capture__copy_interp(capture, addresses, lens, n);
        p.n = capture->interp.n_regions - p.first;
        return p;
}

/* The frame's `previous` word: from a region (*own: the region is one of
 * this function's, or the frame's very own, worth prefetching next time),
 * from the native stack copy (3.12+ entry frames), or copied now on its
 * own when `may_copy`.  False when none holds it. */
static bool previous_of(const struct py_offsets *o, struct capture *capture,
                        const struct prefetched *p, uint64_t frame, bool may_copy, bool *own,
                        uint64_t *previous)
{
        const struct capture_interp *interp = &capture->interp;
        long region = region_of(o, interp, p, frame);
        size_t len = o->frame_size;
        uint64_t first, last;

        *own = false;
        if (region < 0 && capture__read_word(capture, frame, &first) &&
            capture__read_word(capture, frame + o->frame_size - 8, &last) &&
            capture__read_word(capture, frame + o->frame_previous, previous))
                return true;
        if (region < 0) {
                if (!may_copy || interp->n_regions >= CAPTURE_INTERP_REGIONS ||
                    capture__copy_interp(capture, &frame, &len, 1) < (ssize_t)len)
                        return false;
                region = (long)interp->n_regions - 1;
        }
        const struct capture_region *r = &interp->regions[region];
        memcpy(previous, interp->buffer + r->offset + (frame - r->address) + o->frame_previous,
               sizeof(*previous));
        *own = (size_t)region >= p->first || (r->address == frame && r->len == o->frame_size);
        return true;
}

#define SET_SLOTS (2 * PY_FRAME_PREFETCH_MAX)

/* Adds `frame` to the set (open addressing, SET_SLOTS slots, never full:
 * at most PY_FRAME_PREFETCH_MAX members); false when it was there. */
static bool set_add(uint64_t *set, uint64_t frame)
{
        size_t slot = (size_t)((frame >> 3) * 0x9e3779b97f4a7c15ull >> 56) % SET_SLOTS;

        for (; set[slot]; slot = (slot + 1) % SET_SLOTS)
                if (set[slot] == frame)
                        return false;
        set[slot] = frame;
        return true;
}

size_t py_frame_copy__chain(struct py_frame_copy *fc, const struct py_runtime *runtime,
                            struct capture *capture, uint64_t top)
{
        const struct py_offsets *o = runtime->offsets;
        struct py_frame_hint *hint = &fc->hints[(uint32_t)capture->tid % PY_FRAME_HINTS];
        struct py_frame_hint next = {.tid = capture->tid};
        struct prefetched p;
        uint64_t set[SET_SLOTS] = {0}, frame = top;
        size_t max = prefetch_max(o), copied = 0, most = copy_max(o);

        if (hint->tid != capture->tid)
                hint->n = hint->n_ranges = 0;
        p = prefetch(hint, capture);
        /* 3.9/3.10: the regions the ranges left unused go to frames
         * copied one by one, so that a deep chain is learnt in one or two
         * stops, not four (48 reads at most, ~70 us, on a thread's first
         * stop). */
        if (o->model == PY_FRAMES_OBJECTS)
                most += PY_FRAME_RANGES - p.n;
        for (size_t steps = 0; frame && steps < PY_MAX_FRAMES; steps++) {
                size_t before = capture->interp.n_regions;
                uint64_t previous;
                bool own;
                if (frame < 4096 || (frame & 7) ||
                    !previous_of(o, capture, &p, frame, copied < most, &own, &previous))
                        break;
                copied += capture->interp.n_regions > before;
                if (own && next.n < max && set_add(set, frame))
                        next.frames[next.n++] = frame;
                frame = previous;
        }
        /* Then the older frames that read whole and this chain did not
         * use: a recursion deeper than the current one will use them
         * again.  Those not read (unmapped, or no room) are forgotten. */
        for (size_t i = 0; i < hint->n && next.n < max; i++)
                if (prefetched_region(o, &capture->interp, &p, hint->frames[i]) >= 0 &&
                    set_add(set, hint->frames[i]))
                        next.frames[next.n++] = hint->frames[i];
        *hint = next;
        return copied;
}

void py_frame_copy__plan(struct py_frame_copy *fc, pid_t tid, const struct py_offsets *offsets)
{
        struct py_frame_hint *hint = &fc->hints[(uint32_t)tid % PY_FRAME_HINTS];
        size_t fs = offsets->frame_size, budget = prefetch_bytes(offsets), total = 0, n = 0;
        uint64_t sorted[PY_FRAME_PREFETCH_MAX];

        if (hint->tid != tid || hint->n_ranges || hint->n == 0)
                return;
        for (size_t i = 0; i < hint->n; i++) { /* insertion sort: n <= 128 */
                size_t j = n++;
                for (; j > 0 && sorted[j - 1] > hint->frames[i]; j--)
                        sorted[j] = sorted[j - 1];
                sorted[j] = hint->frames[i];
        }
        for (size_t i = 0; i < n; i++) {
                struct py_frame_range *last =
                    hint->n_ranges ? &hint->ranges[hint->n_ranges - 1] : NULL;
                uint64_t end = last ? last->address + last->len : 0;
                if (last && sorted[i] + fs <= end)
                        continue; /* held already */
                if (last && sorted[i] <= end + PY_FRAME_GAP) {
                        size_t grow = (size_t)(sorted[i] + fs - end);
                        if (total + grow > budget)
                                break;
                        last->len += grow;
                        total += grow;
                        continue;
                }
                if (hint->n_ranges == PY_FRAME_RANGES || total + fs > budget)
                        break;
                hint->ranges[hint->n_ranges++] = (struct py_frame_range){sorted[i], fs};
                total += fs;
        }
}

size_t py_frame_copy__bytes(const struct py_offsets *offsets)
{
        /* prefetched, and copied one by one */
        size_t copied =
            copy_max(offsets) + (offsets->model == PY_FRAMES_OBJECTS ? PY_FRAME_RANGES : 0);

        return prefetch_bytes(offsets) + copied * offsets->frame_size;
}
