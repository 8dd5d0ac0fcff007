/* py_frame.c — walking a thread's Python frames after the resume.
 *
 * Why: the frames were copied in the stop window (3.11+: the whole current
 * data-stack chunk; 3.9/3.10: the top frame object), but they form a
 * linked list that must be followed, decoded and checked.
 *
 * How: start at the thread state's current frame (3.9/3.10 tstate->frame;
 * 3.11/3.12 tstate->cframe->current_frame, the cframe being either the
 * tstate's root_cframe or a local of the innermost eval loop, found in the
 * copied native stack; 3.13+ tstate->current_frame) and follow
 * previous/f_back.  Each frame is served from the copy, or read live when
 * it lies outside (generator and coroutine frames, older chunks): those
 * callers' frames only change when they return, so a live read is almost
 * always what the stop window would have seen.
 *
 * Per frame (3.11+), following CPython's own rules:
 *   - owner >= owner_sentinel_min (3.12+: the shim the eval loop pushes on
 *     entry; 3.14 also FRAME_OWNED_BY_CSTACK) or, on 3.13, an executable
 *     that is Py_None: not a Python frame, but the boundary of one C-level
 *     entry into the interpreter;
 *   - 3.14+ f_executable is a tagged _PyStackRef: the low bits are masked;
 *   - incomplete frames (not owned by a generator and not yet past the
 *     code's first traceable instruction) are skipped;
 *   - 3.11 is_entry ends an activation after its frame.
 * On 3.9/3.10 each frame is its own activation.
 *
 * Each boundary carries an anchor for the merge (unwind/stack_merge.c): an
 * address inside its activation's C frame.  3.12+: the sentinel frame's
 * own address (the loop's entry_frame local; it is served from the copied
 * native stack when it lies there).  3.11: the _PyCFrame local of the loop,
 * the k-th of the chain from tstate->cframe for the k-th boundary, kept
 * only when the chain ends at the root cframe with the boundaries (or the
 * walk was cut short).  3.9/3.10: none (0); the merge goes by name.
 *
 * The walk is bounded by PY_MAX_STEPS visits and PY_MAX_FRAMES frames, and
 * a frame visited twice (a cycle in corrupted memory) ends it. */
#include "python/py_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "util/log.h"

#define FRAME_READ_MAX     512
#define OWNED_BY_GENERATOR 1
#define STACKREF_TAG_BITS  3ull
#define SEEN_SMALL_SLOTS   512

_Static_assert(PY_SEEN_SLOTS <= 65536, "seen_used holds 16-bit slot numbers");
_Static_assert(SEEN_SMALL_SLOTS <= PY_SEEN_SLOTS &&
                   (SEEN_SMALL_SLOTS & (SEEN_SMALL_SLOTS - 1)) == 0,
               "the small set is a power-of-two prefix of the whole one");

static uint64_t u64_at(const uint8_t *data, uint64_t offset)
{
        uint64_t value;

        memcpy(&value, data + offset, sizeof(value));
        return value;
}

/* The bytes at [address, address + len) in the copied native stack. */
static const uint8_t *stack_at(const struct capture *capture, uint64_t address, size_t len)
{
        if (address < capture->stack_start || len > capture->stack_len ||
            address - capture->stack_start > capture->stack_len - len)
                return NULL;
        return capture->stack + (address - capture->stack_start);
}

static bool read_memory(struct py_walk *walk, uint64_t address, void *out, size_t len)
{
        const uint8_t *copy = capture__interp_at(walk->capture, address, len);

        if (!copy)
                copy = stack_at(walk->capture, address, len); /* 3.12+ entry frames */
        if (copy) {
                memcpy(out, copy, len);
                return true;
        }
        walk->live_reads++;
        return address >= 4096 &&
               remote_memory__read(walk->capture->pid, address, out, len) == (ssize_t)len;
}

/* Probes the first mask + 1 slots of the visited set: true when `address`
 * is there, else records it. */
static bool seen_probe(struct py_walk *walk, size_t mask, uint64_t address)
{
        size_t slot = (size_t)(((address >> 3) * 0x9e3779b97f4a7c15ull) >> 40) & mask;

        for (size_t i = 0; i <= mask; i++, slot = (slot + 1) & mask) {
                if (walk->seen[slot] == address)
                        return true;
                if (walk->seen[slot] == 0) {
                        walk->seen[slot] = address;
                        walk->seen_used[walk->n_seen_used++] = (uint16_t)slot;
                        return false;
                }
        }
        return true;
}

/* True when `address` was visited already; records it otherwise.  A walk
 * starts in the set's first SEEN_SMALL_SLOTS slots (4 KiB, which stay in
 * the cache) and moves to all PY_SEEN_SLOTS when that is half full. */
static bool seen_before(struct py_walk *walk, uint64_t address)
{
        if (walk->seen_mask < PY_SEEN_SLOTS - 1 && walk->n_seen_used >= SEEN_SMALL_SLOTS / 2) {
                uint64_t moved[SEEN_SMALL_SLOTS / 2];
                size_t n = walk->n_seen_used;

                for (size_t i = 0; i < n; i++) {
                        moved[i] = walk->seen[walk->seen_used[i]];
                        walk->seen[walk->seen_used[i]] = 0;
                }
                walk->n_seen_used = 0;
                walk->seen_mask = PY_SEEN_SLOTS - 1;
                for (size_t i = 0; i < n; i++)
                        (void)seen_probe(walk, walk->seen_mask, moved[i]);
        }
        return seen_probe(walk, walk->seen_mask, address);
}

static void push_boundary(struct py_walk *walk, uint64_t anchor)
{
        walk->items[walk->n_items++] = (struct py_item){.boundary = true, .anchor = anchor};
}

static void push_frame(struct py_walk *walk, struct py_code *code, int64_t position)
{
        const struct py_offsets *o = walk->runtime->offsets;

        walk->items[walk->n_items++] = (struct py_item){
            .function = code ? code->name : PY_UNKNOWN_FUNCTION,
            .filename = code ? code->filename : "",
            .line = code ? py_code__line(code, o->line_format, position) : -1,
        };
        walk->n_frames++;
}

uint64_t py_frame__top(const struct py_walk *walk, uint64_t tstate)
{
        const struct py_offsets *o = walk->runtime->offsets;
        const uint8_t *copy = capture__interp_at(walk->capture, tstate, o->tstate_size);
        uint64_t cframe, frame;

        if (!copy)
                return 0;
        if (!o->cframe_current_frame && !o->tstate_root_cframe)
                return u64_at(copy, o->tstate_frame);
        /* 3.11/3.12: through the _PyCFrame. */
        cframe = u64_at(copy, o->tstate_frame);
        if (cframe == tstate + o->tstate_root_cframe)
                return u64_at(copy, o->tstate_root_cframe + o->cframe_current_frame);
        if (capture__read_word(walk->capture, cframe + o->cframe_current_frame, &frame))
                return frame;
        if (cframe >= 4096 &&
            remote_memory__read(walk->capture->pid, cframe + o->cframe_current_frame, &frame,
                                sizeof(frame)) == sizeof(frame))
                return frame;
        return 0;
}

/* 3.9/3.10: a PyFrameObject. */
static void walk_object_frame(struct py_walk *walk, const uint8_t *frame)
{
        const struct py_offsets *o = walk->runtime->offsets;
        int32_t lasti;
        struct py_code *code =
            py_code__get(walk->codes, u64_at(frame, o->frame_code), walk->now_ns);

        memcpy(&lasti, frame + o->frame_instr, sizeof(lasti));
        push_frame(walk, code, lasti);
        push_boundary(walk, 0);
}

/* 3.11+: an _PyInterpreterFrame, at `address`. */
static void walk_interpreter_frame(struct py_walk *walk, const uint8_t *frame, uint64_t address)
{
        const struct py_offsets *o = walk->runtime->offsets;
        uint64_t executable = u64_at(frame, o->frame_code);
        uint8_t owner = frame[o->frame_owner];
        bool entry = o->frame_is_entry && frame[o->frame_is_entry];

        if (o->tagged_executable)
                executable &= ~STACKREF_TAG_BITS;
        if ((o->owner_sentinel_min && owner >= o->owner_sentinel_min) ||
            (o->executable_may_be_none && executable == walk->runtime->none_object && executable)) {
                push_boundary(walk, address); /* the loop's entry_frame local */
                return;
        }
        struct py_code *code = py_code__get(walk->codes, executable, walk->now_ns);
        if (!code) {
                push_frame(walk, NULL, -1);
        } else {
                uint64_t instr = u64_at(frame, o->frame_instr);
                uint64_t base = executable + o->code_adaptive;
                bool incomplete = owner != OWNED_BY_GENERATOR && o->code_firsttraceable &&
                                  instr < base + 2 * (uint64_t)code->first_traceable;
                if (!incomplete)
                        push_frame(walk, code, instr >= base ? (int64_t)(instr - base) / 2 : -1);
        }
        if (entry)
                push_boundary(walk, 0); /* anchored later: add_cframe_anchors */
}

static bool read_word(struct py_walk *walk, uint64_t address, uint64_t *value)
{
        return capture__read_word(walk->capture, address, value) ||
               read_memory(walk, address, value, sizeof(*value));
}

/* 3.11: the k-th boundary (an is_entry frame) belongs to the k-th
 * _PyCFrame of the chain from tstate->cframe, each a local of its eval
 * loop.  Unless the counts agree (or the walk was cut short), the anchors
 * stay 0 and the merge goes by name. */
static void add_cframe_anchors(struct py_walk *walk, uint64_t tstate)
{
        const struct py_offsets *o = walk->runtime->offsets;
        const uint8_t *copy = capture__interp_at(walk->capture, tstate, o->tstate_size);
        uint64_t root = tstate + o->tstate_root_cframe, cframe;
        size_t i;

        if (!copy)
                return;
        cframe = u64_at(copy, o->tstate_frame);
        for (i = 0; i < walk->n_items; i++) {
                if (!walk->items[i].boundary)
                        continue;
                if (cframe == root || cframe < 4096 || (cframe & 7))
                        break;
                walk->items[i].anchor = cframe;
                if (!read_word(walk, cframe + o->cframe_previous, &cframe))
                        break;
        }
        if (i == walk->n_items && (cframe == root || walk->truncated))
                return;
        for (i = 0; i < walk->n_items; i++)
                walk->items[i].anchor = 0;
}

static void walk_frames(struct py_walk *walk, uint64_t address)
{
        const struct py_offsets *o = walk->runtime->offsets;
        uint8_t frame[FRAME_READ_MAX];
        size_t frame_size = o->frame_size < sizeof(frame) ? o->frame_size : sizeof(frame);

        for (size_t steps = 0; address; steps++) {
                if (steps >= PY_MAX_STEPS || walk->n_frames >= PY_MAX_FRAMES ||
                    seen_before(walk, address)) {
                        walk->truncated = true;
                        return;
                }
                if ((address & 7) || !read_memory(walk, address, frame, frame_size)) {
                        log_debug("PID %d: unreadable Python frame at 0x%llx",
                                  (int)walk->capture->pid, (unsigned long long)address);
                        push_frame(walk, NULL, -1);
                        walk->truncated = true;
                        return;
                }
                if (o->model == PY_FRAMES_OBJECTS)
                        walk_object_frame(walk, frame);
                else
                        walk_interpreter_frame(walk, frame, address);
                address = u64_at(frame, o->frame_previous);
        }
}

void py_frame__walk(struct py_walk *walk, uint64_t tstate)
{
        walk->n_items = walk->n_frames = 0;
        walk->truncated = false;
        walk->n_seen_used = 0;
        walk->seen_mask = SEEN_SMALL_SLOTS - 1;
        walk_frames(walk, py_frame__top(walk, tstate));
        for (size_t i = 0; i < walk->n_seen_used; i++)
                walk->seen[walk->seen_used[i]] = 0;
        walk->n_seen_used = 0;
        if (walk->runtime->offsets->frame_is_entry)
                add_cframe_anchors(walk, tstate);
}

int py_walk_scratch__init(struct py_walk_scratch *scratch)
{
        scratch->items = calloc(PY_ITEMS_MAX, sizeof(*scratch->items));
        scratch->seen = calloc(PY_SEEN_SLOTS, sizeof(*scratch->seen));
        scratch->seen_used = calloc(PY_SEEN_SLOTS, sizeof(*scratch->seen_used));
        if (!scratch->items || !scratch->seen || !scratch->seen_used) {
                py_walk_scratch__release(scratch);
                return -ENOMEM;
        }
        return 0;
}

void py_walk_scratch__release(struct py_walk_scratch *scratch)
{
        free(scratch->items);
        free(scratch->seen);
        free(scratch->seen_used);
        *scratch = (struct py_walk_scratch){0};
}
