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
 * loop pushes on entry).  Walking the native frames leaf to root, each
 * interpreter-loop frame (NATIVE_EVAL) is replaced by the next group.
 * Native frames outside the interpreter stay where they are, so a ctypes
 * callback's libffi and _ctypes frames sit between the Python frames that
 * called into C and those the callback runs.  Other frames of the
 * interpreter itself (NATIVE_INTERNAL: call machinery, main(),
 * Py_RunMain...) are dropped unless the mode is NATIVE_MODE_ALL;
 * NATIVE_MODE_PYTHON_ONLY drops every native frame.
 *
 * Counts that do not line up (more loop frames than groups, or groups
 * left over although the native walk was complete) mean one side moved or
 * could not be read; the sample is kept as native leaf frames up to the
 * first loop frame, all Python frames, and a "[merge failed]" frame.
 * Groups left over because the native walk stopped early (stack copy too
 * short, or no interpreter-loop frame reached at all) are appended at the
 * root side, and loop frames beyond a Python
 * walk cut at the depth cap are dropped: neither is a failure. */
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

static void merge_failed(const struct merge_input *in, struct merged_stack *out)
{
        out->n = 0;
        for (size_t p = 0; p < in->n_pcs && in->classes[p] != NATIVE_EVAL; p++)
                if (keep_native(in->mode, in->classes[p]))
                        push_native(out, in->pcs[p]);
        for (size_t i = 0; i < in->n_items; i++)
                if (!in->items[i].boundary)
                        push_python(out, &in->items[i]);
        push_python(
            out, &(struct py_item){.function = MERGE_FAILED_FUNCTION, .filename = "", .line = -1});
        out->failed = true;
        out->truncated = true;
}

static bool has_eval(const struct merge_input *in)
{
        for (size_t p = 0; p < in->n_pcs; p++)
                if (in->classes[p] == NATIVE_EVAL)
                        return true;
        return false;
}

void stack_merge__merge(const struct merge_input *in, struct merged_stack *out)
{
        size_t item = 0;
        bool native_truncated = in->native_truncated;

        out->n = 0;
        out->failed = false;
        /* No interpreter-loop frame at all: the native walk ended before
         * reaching the interpreter (libdwfl can end quietly, as if at the
         * outermost frame).  The Python frames go after the native ones. */
        if (!has_eval(in))
                native_truncated = true;
        out->truncated = native_truncated || in->python_truncated;
        for (size_t p = 0; p < in->n_pcs; p++) {
                if (in->classes[p] == NATIVE_EVAL) {
                        if (item >= in->n_items && !in->python_truncated) {
                                merge_failed(in, out);
                                return;
                        }
                        item = emit_group(in, item, out);
                }
                if (keep_native(in->mode, in->classes[p]))
                        push_native(out, in->pcs[p]);
        }
        if (frames_left(in, item)) {
                if (!native_truncated) {
                        merge_failed(in, out);
                        return;
                }
                while (item < in->n_items)
                        item = emit_group(in, item, out);
        }
}
