/* stack_merge.c — interleaving native and Python frames.
 *
 * Why: natively, a Python thread is _PyEval_EvalFrameDefault again and
 * again; from the interpreter's side it is Python frames with no idea of
 * the C extension, libc or ctypes frames between them.  The useful stack
 * has both, in calling order.
 *
 * How: both lists are leaf first.  The Python side is cut into groups by
 * boundary items: one group per C-level entry into the interpreter loop
 * (3.9/3.10: every Python frame is its own activation; 3.11: a group ends
 * with a frame marked is_entry; 3.12+: at each shim/sentinel frame the
 * loop pushes on entry).  Each group replaces the native frame of the
 * interpreter-loop activation that ran it.  Native frames outside the
 * interpreter stay where they are, so a ctypes callback's libffi and
 * _ctypes frames sit between the Python frames that called into C and
 * those the callback runs.  Other frames of the interpreter itself
 * (NATIVE_INTERNAL: call machinery, main(), Py_RunMain...) are dropped
 * unless the mode is NATIVE_MODE_ALL; NATIVE_MODE_PYTHON_ONLY drops every
 * native frame.
 *
 * Which native frame ran a group is found in one of two ways:
 *
 *   By anchor (3.11+, when every native frame has a stack pointer and every
 *   boundary an anchor).  Each entry into the loop leaves an object in the
 *   loop's own C frame: the entry/shim frame (3.12+) or the _PyCFrame
 *   (3.11).  Native frame i owns the stack [sps[i], sps[i + 1]), so the
 *   frame whose span holds a group's anchor ran that group, whatever its
 *   name: this works for stripped interpreters whose loop is split into an
 *   unnamed .cold part.  A frame named as the loop that runs no group is
 *   treated as interpreter code.  Groups must land on frames further from
 *   the leaf, one each; an anchor below the leaf or out of order means one
 *   side moved, and the merge fails.  An empty group whose anchor is not on
 *   the stack (a sentinel kept elsewhere) is ignored.  Groups whose anchors
 *   lie above the outermost frame walked (whose span has no known end) were
 *   run by frames the walk did not reach: they go at the root side and the
 *   stack is marked truncated.  A group the Python walk was cut inside (no
 *   boundary) goes at the next frame named as the loop, else right away.
 *
 *   By class (3.9/3.10, or no anchors).  Walking the native frames leaf to
 *   root, each frame classified NATIVE_EVAL by its name is replaced by the
 *   next group.  Counts that do not line up (more loop frames than groups,
 *   or groups left over although the native walk was complete, including
 *   no loop frame at all) mean the two sides cannot be matched, except for
 *   exactly one loop frame more, at the leaf: a loop entered or leaving
 *   while it has no Python frame (see extra_leaf_eval).  Groups left
 *   over because the native walk says it stopped early (stack copy too
 *   short) are appended at the root side, and loop frames beyond a Python
 *   walk cut at the depth cap are dropped: neither is a failure.  A Python
 *   walk torn on memory that did not check out (python_torn: a cycle or an
 *   unreadable frame, on 3.9/3.10 a chain read live after it moved) fails
 *   when the native walk is whole, whatever the counts: its frames are not
 *   those the native loop frames ran, and dropping the loop frames it does
 *   not cover would tear the stack silently.
 *
 * A failed merge keeps the sample: native leaf frames up to the first
 * interpreter-loop frame, all Python frames, and a "[merge failed]" frame;
 * out->failed is set (the sampler counts it in merge_failed). */
#include "unwind/stack_merge.h"

#include <stdlib.h>
#include <string.h>

#define EVAL_FUNCTION "_PyEval_EvalFrameDefault"

bool stack_merge__is_eval_function(const char *name)
{
        size_t len = strlen(EVAL_FUNCTION);

        return name && strncmp(name, EVAL_FUNCTION, len) == 0 &&
               (name[len] == '\0' || name[len] == '.');
}

struct merged_stack *merged_stack__new(size_t capacity)
{
        struct merged_stack *stack =
            malloc(sizeof(*stack) + (capacity ? capacity : 1) * sizeof(stack->frames[0]));

        if (!stack)
                return NULL;
        stack->n = 0;
        stack->capacity = capacity;
        stack->truncated = stack->failed = stack->has_thread_ident = false;
        stack->thread_ident = 0;
        stack->gil = stack->asyncio_task = NULL;
        stack->task_span = 0;
        return stack;
}

static void push_native(struct merged_stack *out, uint64_t pc)
{
        if (out->n < out->capacity)
                out->frames[out->n++] = (struct merged_frame){.pc = pc};
}

static void push_python(struct merged_stack *out, const struct py_item *item)
{
        if (out->n < out->capacity)
                out->frames[out->n++] = (struct merged_frame){
                    .function = item->function, .filename = item->filename, .line = item->line};
}

static bool keep_native(enum native_mode mode, enum native_class cls)
{
        if (mode == NATIVE_MODE_PYTHON_ONLY)
                return false;
        return mode == NATIVE_MODE_ALL || cls == NATIVE_OTHER;
}

/* Emits the next group; returns the index after its boundary. */
static size_t emit_group(const struct merge_input *in, size_t i, struct merged_stack *out)
{
        for (; i < in->n_items; i++) {
                if (in->items[i].boundary)
                        return i + 1;
                push_python(out, &in->items[i]);
        }
        return i;
}

static bool frames_left(const struct merge_input *in, size_t i)
{
        for (; i < in->n_items; i++)
                if (!in->items[i].boundary)
                        return true;
        return false;
}

/* The index of the boundary that ends the group starting at `i`, or
 * n_items when the walk was cut inside it. */
static size_t group_end(const struct merge_input *in, size_t i)
{
        while (i < in->n_items && !in->items[i].boundary)
                i++;
        return i;
}

/* The first frame at or after `p` named as the interpreter loop, or n_pcs. */
static size_t first_eval(const struct merge_input *in, size_t p)
{
        while (p < in->n_pcs && in->classes[p] != NATIVE_EVAL)
                p++;
        return p;
}

/* Native frames [from, to), as the mode keeps them.  A frame named as the
 * interpreter loop that runs no group is interpreter code like any other. */
static void push_natives(const struct merge_input *in, size_t from, size_t to,
                         struct merged_stack *out)
{
        for (size_t p = from; p < to; p++)
                if (keep_native(in->mode, in->classes[p]))
                        push_native(out, in->pcs[p]);
}

/* Keeps the native frames before `leaf_end`, every Python frame and the
 * marker. */
static void merge_failed(const struct merge_input *in, size_t leaf_end, struct merged_stack *out)
{
        out->n = 0;
        push_natives(in, 0, leaf_end, out);
        for (size_t i = 0; i < in->n_items; i++)
                if (!in->items[i].boundary)
                        push_python(out, &in->items[i]);
        push_python(
            out, &(struct py_item){.function = MERGE_FAILED_FUNCTION, .filename = "", .line = -1});
        out->failed = true;
        out->truncated = true;
}

/* ---- by anchor ---- */

#define HOST_NONE   (-1) /* below the leaf's stack pointer: no live frame */
#define HOST_BEYOND (-2) /* above the frames walked */

/* Every frame has a stack pointer, growing towards the root, and every
 * boundary an anchor. */
static bool anchors_usable(const struct merge_input *in)
{
        bool any = false;

        if (!in->sps || in->n_pcs == 0)
                return false;
        for (size_t p = 0; p < in->n_pcs; p++)
                if (in->sps[p] == 0 || (p > 0 && in->sps[p] < in->sps[p - 1]))
                        return false;
        for (size_t i = 0; i < in->n_items; i++) {
                if (in->items[i].boundary && in->items[i].anchor == 0)
                        return false;
                any |= in->items[i].boundary;
        }
        return any;
}

/* The frame whose span [sps[p], sps[p + 1]) holds `anchor`.  The outermost
 * frame walked has no known end: an anchor above its stack pointer is
 * HOST_BEYOND. */
static long host_of(const struct merge_input *in, uint64_t anchor)
{
        if (anchor < in->sps[0])
                return HOST_NONE;
        for (size_t p = 0; p + 1 < in->n_pcs; p++)
                if (anchor < in->sps[p + 1])
                        return (long)p;
        return HOST_BEYOND;
}

/* Where merge_failed stops keeping leaf native frames: the first frame
 * that runs a group or is named as the interpreter loop. */
static size_t anchored_leaf_end(const struct merge_input *in)
{
        size_t end = group_end(in, 0);
        long host = end < in->n_items ? host_of(in, in->items[end].anchor) : HOST_NONE;
        size_t eval = first_eval(in, 0);

        return host >= 0 && (size_t)host < eval ? (size_t)host : eval;
}

/* The Python walk was cut inside the group at `item`: it goes where the
 * next frame named as the loop is, or right here.  Returns the next native
 * frame. */
static size_t place_cut_group(const struct merge_input *in, size_t p, size_t item,
                              struct merged_stack *out)
{
        size_t host = first_eval(in, p);

        if (host == in->n_pcs) {
                emit_group(in, item, out);
                return p;
        }
        push_natives(in, p, host, out);
        emit_group(in, item, out);
        if (in->mode == NATIVE_MODE_ALL)
                push_native(out, in->pcs[host]);
        return host + 1;
}

static void merge_by_anchor(const struct merge_input *in, struct merged_stack *out)
{
        size_t item = 0, p = 0;

        while (item < in->n_items) {
                size_t end = group_end(in, item);
                if (end == in->n_items) {
                        p = place_cut_group(in, p, item, out);
                        item = end;
                        break;
                }
                long host = host_of(in, in->items[end].anchor);
                if (host == HOST_BEYOND)
                        break;
                if (host == HOST_NONE || (size_t)host < p) {
                        if (end > item) {
                                merge_failed(in, anchored_leaf_end(in), out);
                                return;
                        }
                        item = end + 1; /* an empty group off the stack */
                        continue;
                }
                push_natives(in, p, (size_t)host, out);
                item = emit_group(in, item, out);
                if (in->mode == NATIVE_MODE_ALL)
                        push_native(out, in->pcs[host]);
                p = (size_t)host + 1;
        }
        push_natives(in, p, in->n_pcs, out);
        /* Groups run by frames the native walk did not reach. */
        if (frames_left(in, item))
                out->truncated = true;
        while (item < in->n_items)
                item = emit_group(in, item, out);
}

/* ---- by class ---- */

/* The groups of the Python side: its boundaries, and the frames after the
 * last one. */
static size_t count_groups(const struct merge_input *in)
{
        size_t n = 0, i = 0;

        while (i < in->n_items) {
                i = group_end(in, i);
                n++;
                i += i < in->n_items;
        }
        return n;
}

/* An interpreter-loop frame at the leaf that runs no Python frame yet (or
 * no longer): on 3.9/3.10 the loop sets tstate->frame a few instructions
 * after its entry and restores it just before it returns, so a stop there
 * sees one loop frame more than frames (a generator's, mostly: asyncio
 * enters and leaves them all the time).  Only that exact count, on two
 * complete walks, is taken for it. */
static size_t extra_leaf_eval(const struct merge_input *in, size_t leaf_end)
{
        size_t n_eval = 0;

        if (in->native_truncated || in->python_truncated || leaf_end == in->n_pcs)
                return in->n_pcs;
        for (size_t p = leaf_end; p < in->n_pcs; p++)
                n_eval += in->classes[p] == NATIVE_EVAL;
        return n_eval == count_groups(in) + 1 ? leaf_end : in->n_pcs;
}

static void merge_by_class(const struct merge_input *in, struct merged_stack *out)
{
        size_t item = 0;
        size_t leaf_end = first_eval(in, 0);
        size_t skipped = extra_leaf_eval(in, leaf_end);

        /* A Python walk torn by a chain that moved under it (a cycle, an
         * unreadable frame: 3.9/3.10 frames read after the resume) while
         * the native walk is whole: its loop frames beyond the walk would
         * be dropped silently, so the two sides are said not to match. */
        if (in->python_torn && !in->native_truncated) {
                merge_failed(in, leaf_end, out);
                return;
        }
        /* No interpreter-loop frame at all: the walk ended before reaching
         * the interpreter, or the loop has no name (stripped).  Only the
         * first is known when the walk says it was cut short. */
        if (leaf_end == in->n_pcs && frames_left(in, 0) && !in->native_truncated) {
                merge_failed(in, leaf_end, out);
                return;
        }
        for (size_t p = 0; p < in->n_pcs; p++) {
                if (p == skipped) { /* interpreter code, as any other */
                        if (in->mode == NATIVE_MODE_ALL)
                                push_native(out, in->pcs[p]);
                        continue;
                }
                if (in->classes[p] == NATIVE_EVAL) {
                        if (item >= in->n_items && !in->python_truncated) {
                                merge_failed(in, leaf_end, out);
                                return;
                        }
                        item = emit_group(in, item, out);
                }
                if (keep_native(in->mode, in->classes[p]))
                        push_native(out, in->pcs[p]);
        }
        if (frames_left(in, item)) {
                if (!in->native_truncated) {
                        merge_failed(in, leaf_end, out);
                        return;
                }
                while (item < in->n_items)
                        item = emit_group(in, item, out);
        }
}

void stack_merge__merge(const struct merge_input *in, struct merged_stack *out)
{
        out->n = 0;
        out->failed = false;
        out->truncated = in->native_truncated || in->python_truncated;
        if (anchors_usable(in))
                merge_by_anchor(in, out);
        else
                merge_by_class(in, out);
}
