/* test_python_merge.c — interleaving native and Python frames
 * (unwind/stack_merge.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/stack_merge.h"
#include "tests/unit/check.h"

#define E NATIVE_EVAL
#define I NATIVE_INTERNAL
#define O NATIVE_OTHER
#define PY(name)                                                                                   \
        {                                                                                          \
                .function = name, .filename = "f.py", .line = 1                                    \
        }
#define BOUNDARY                                                                                   \
        {                                                                                          \
                .boundary = true                                                                   \
        }

/* Renders a stack as "a,b,0x10,..." (native frames as hex pcs). */
static const char *render(const struct merged_stack *s)
{
        static char text[1024];
        size_t len = 0;

        text[0] = '\0';
        for (size_t i = 0; i < s->n; i++) {
                if (s->frames[i].function)
                        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
                                                i ? "," : "", s->frames[i].function);
                else
                        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s0x%llx",
                                                i ? "," : "", (unsigned long long)s->frames[i].pc);
        }
        return text;
}

static struct merged_stack *merge(const uint64_t *pcs, const enum native_class *classes,
                                  size_t n_pcs, bool native_truncated, const struct py_item *items,
                                  size_t n_items, enum native_mode mode)
{
        struct merged_stack *out = merged_stack__new(n_pcs + n_items + 1);
        struct merge_input in = {
            .pcs = pcs,
            .classes = classes,
            .n_pcs = n_pcs,
            .native_truncated = native_truncated,
            .items = items,
            .n_items = n_items,
            .mode = mode,
        };

        CHECK(out);
        stack_merge__merge(&in, out);
        return out;
}

/* 3.11-style: one eval activation runs three frames; a ctypes callback
 * re-enters the interpreter. */
static void test_callback(void)
{
        /* leaf: libc write, eval(cb), ffi_call_back 0x30, _ctypes 0x40,
         * internal call 0x50, eval(main group), internal main 0x70, libc 0x80 */
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80};
        const enum native_class cls[] = {O, E, O, O, I, E, I, O};
        const struct py_item items[] = {
            PY("callback"), BOUNDARY,                               /* callback's activation */
            PY("call_c"),   PY("middle"), PY("<module>"), BOUNDARY, /* outer activation */
        };
        struct merged_stack *s;

        s = merge(pcs, cls, 8, false, items, 6, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && !s->truncated);
        CHECK(strcmp(render(s), "0x10,callback,0x30,0x40,call_c,middle,<module>,0x80") == 0);
        free(s);

        s = merge(pcs, cls, 8, false, items, 6, NATIVE_MODE_ALL);
        CHECK(strcmp(render(s),
                     "0x10,callback,0x20,0x30,0x40,0x50,call_c,middle,<module>,0x60,0x70,0x80") ==
              0);
        free(s);

        s = merge(pcs, cls, 8, false, items, 6, NATIVE_MODE_PYTHON_ONLY);
        CHECK(strcmp(render(s), "callback,call_c,middle,<module>") == 0);
        free(s);
}

/* 3.9/3.10: one eval frame per Python frame. */
static void test_one_per_frame(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x40, 0x50};
        const enum native_class cls[] = {E, I, E, I, E};
        const struct py_item items[] = {PY("c"), BOUNDARY, PY("b"), BOUNDARY, PY("a"), BOUNDARY};
        struct merged_stack *s = merge(pcs, cls, 5, false, items, 6, NATIVE_MODE_DEFAULT);

        CHECK(!s->failed);
        CHECK(strcmp(render(s), "c,b,a") == 0);
        free(s);
}

/* An activation that ran no complete frame (3.12 shim right after entry). */
static void test_empty_group(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30};
        const enum native_class cls[] = {E, O, E};
        const struct py_item items[] = {BOUNDARY, PY("a"), BOUNDARY};
        struct merged_stack *s = merge(pcs, cls, 3, false, items, 3, NATIVE_MODE_DEFAULT);

        CHECK(!s->failed);
        CHECK(strcmp(render(s), "0x20,a") == 0);
        free(s);
}

/* More eval frames than activations: merge failed, nothing lost. */
static void test_too_many_evals(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x38, 0x40};
        const enum native_class cls[] = {O, E, E, E, O};
        const struct py_item items[] = {PY("a"), PY("b"), BOUNDARY};
        struct merged_stack *s = merge(pcs, cls, 5, false, items, 3, NATIVE_MODE_DEFAULT);

        CHECK(s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,a,b," MERGE_FAILED_FUNCTION) == 0);
        free(s);
}

/* Exactly one eval frame more, at the leaf: a loop entered (or leaving)
 * before it set its frame (3.9/3.10 generators); it runs nothing. */
static void test_entering_eval(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x40};
        const enum native_class cls[] = {O, E, E, O};
        const struct py_item items[] = {PY("a"), PY("b"), BOUNDARY};
        struct merged_stack *s = merge(pcs, cls, 4, false, items, 3, NATIVE_MODE_DEFAULT);

        CHECK(!s->failed && !s->truncated);
        CHECK(strcmp(render(s), "0x10,a,b,0x40") == 0);
        free(s);
        s = merge(pcs, cls, 4, false, items, 3, NATIVE_MODE_ALL);
        CHECK(strcmp(render(s), "0x10,0x20,a,b,0x30,0x40") == 0);
        free(s);
        /* Not when the native walk was cut short: the counts say nothing. */
        s = merge(pcs, cls, 4, true, items, 3, NATIVE_MODE_DEFAULT);
        CHECK(strcmp(render(s), "0x10,a,b,0x40") != 0);
        free(s);
}

/* Python frames left over: a failure when the native walk was complete,
 * appended at the root when it was cut short. */
static void test_leftover(void)
{
        const uint64_t pcs[] = {0x10, 0x20};
        const enum native_class cls[] = {O, E};
        const enum native_class no_eval[] = {O, O};
        const struct py_item items[] = {PY("a"), BOUNDARY, PY("b"), BOUNDARY};
        struct merged_stack *s = merge(pcs, cls, 2, false, items, 4, NATIVE_MODE_DEFAULT);

        CHECK(s->failed);
        CHECK(strcmp(render(s), "0x10,a,b," MERGE_FAILED_FUNCTION) == 0);
        free(s);
        s = merge(pcs, cls, 2, true, items, 4, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,a,b") == 0);
        free(s);
        /* No loop frame at all: the Python frames cannot be placed. */
        s = merge(pcs, no_eval, 2, false, items, 4, NATIVE_MODE_DEFAULT);
        CHECK(s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,0x20,a,b," MERGE_FAILED_FUNCTION) == 0);
        free(s);
        /* ... unless the walk says it stopped short of the interpreter. */
        s = merge(pcs, no_eval, 2, true, items, 4, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,0x20,a,b") == 0);
        free(s);
}

#define ANCHOR(address)                                                                            \
        {                                                                                          \
                .boundary = true, .anchor = address                                                \
        }

static struct merged_stack *merge_sps(const uint64_t *pcs, const uint64_t *sps,
                                      const enum native_class *classes, size_t n_pcs,
                                      bool native_truncated, const struct py_item *items,
                                      size_t n_items, bool python_truncated, enum native_mode mode)
{
        struct merged_stack *out = merged_stack__new(n_pcs + n_items + 1);
        struct merge_input in = {
            .pcs = pcs,
            .sps = sps,
            .classes = classes,
            .n_pcs = n_pcs,
            .native_truncated = native_truncated,
            .items = items,
            .n_items = n_items,
            .python_truncated = python_truncated,
            .mode = mode,
        };

        CHECK(out);
        stack_merge__merge(&in, out);
        return out;
}

/* 3.9/3.10 one frame per loop frame, the Python walk cut after two of
 * three: at the depth cap the outer loop frame is dropped (truncated); on
 * a chain torn under the walk (python_torn) the merge fails, counted. */
static void test_torn_walk(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x38, 0x40};
        const enum native_class cls[] = {O, E, E, E, O};
        const struct py_item items[] = {PY("a"), BOUNDARY, PY("b"), BOUNDARY};
        struct merged_stack *s =
            merge_sps(pcs, NULL, cls, 5, false, items, 4, true, NATIVE_MODE_DEFAULT);
        struct merge_input in = {.pcs = pcs,
                                 .classes = cls,
                                 .n_pcs = 5,
                                 .items = items,
                                 .n_items = 4,
                                 .python_truncated = true,
                                 .python_torn = true};

        CHECK(!s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,a,b,0x40") == 0);
        stack_merge__merge(&in, s);
        CHECK(s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,a,b," MERGE_FAILED_FUNCTION) == 0);
        /* Both walks cut short: nothing to compare, as before. */
        in.native_truncated = true;
        stack_merge__merge(&in, s);
        CHECK(!s->failed && s->truncated);
        free(s);
}

/* The callback stack of a stripped interpreter: its loop runs in an
 * unnamed .cold part, classified as interpreter code.  The anchors (entry
 * frames on the C stack) find the loop frames anyway. */
static void test_anchor_stripped_callback(void)
{
        /* leaf: libc 0x10, .cold(cb) 0x20, ffi 0x30, qsort 0x40, internal
         * 0x50, .cold(main) 0x60, internal main 0x70, libc 0x80 */
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80};
        const uint64_t sps[] = {0x1000, 0x1100, 0x1300, 0x1400, 0x1500, 0x1600, 0x1800, 0x1900};
        const enum native_class cls[] = {O, I, O, O, I, I, I, O};
        const struct py_item items[] = {
            PY("callback"), ANCHOR(0x1180),                                 /* in 0x20's frame */
            PY("call_c"),   PY("middle"),   PY("<module>"), ANCHOR(0x1700), /* in 0x60's */
        };
        struct merged_stack *s;

        s = merge_sps(pcs, sps, cls, 8, false, items, 6, false, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && !s->truncated);
        CHECK(strcmp(render(s), "0x10,callback,0x30,0x40,call_c,middle,<module>,0x80") == 0);
        free(s);

        s = merge_sps(pcs, sps, cls, 8, false, items, 6, false, NATIVE_MODE_ALL);
        CHECK(strcmp(render(s),
                     "0x10,callback,0x20,0x30,0x40,0x50,call_c,middle,<module>,0x60,0x70,0x80") ==
              0);
        free(s);

        /* Without stack pointers: by name, and no name matches. */
        s = merge_sps(pcs, NULL, cls, 8, false, items, 6, false, NATIVE_MODE_DEFAULT);
        CHECK(s->failed && s->truncated);
        CHECK(
            strcmp(render(s),
                   "0x10,0x30,0x40,0x80,callback,call_c,middle,<module>," MERGE_FAILED_FUNCTION) ==
            0);
        free(s);
}

/* Anchors win over names: a named loop frame that runs no group is
 * interpreter code (say, sampled in its prologue), and an empty group
 * whose anchor is not on the stack is ignored. */
static void test_anchor_over_names(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x40};
        const uint64_t sps[] = {0x1000, 0x1100, 0x1200, 0x1300};
        const enum native_class cls[] = {E, O, E, O};
        const struct py_item items[] = {PY("a"), PY("b"), ANCHOR(0x1210), ANCHOR(0x500)};
        struct merged_stack *s =
            merge_sps(pcs, sps, cls, 4, false, items, 4, false, NATIVE_MODE_DEFAULT);

        CHECK(!s->failed && !s->truncated);
        CHECK(strcmp(render(s), "0x20,a,b,0x40") == 0);
        free(s);
}

/* Anchors out of order, or below the leaf: the sides moved; failed. */
static void test_anchor_mismatch(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x40};
        const uint64_t sps[] = {0x1000, 0x1100, 0x1200, 0x1300};
        const enum native_class cls[] = {O, I, O, I};
        const struct py_item same[] = {PY("a"), ANCHOR(0x1110), PY("b"), ANCHOR(0x1120)};
        const struct py_item below[] = {PY("a"), ANCHOR(0x800)};
        struct merged_stack *s;

        s = merge_sps(pcs, sps, cls, 4, false, same, 4, false, NATIVE_MODE_DEFAULT);
        CHECK(s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,a,b," MERGE_FAILED_FUNCTION) == 0);
        free(s);
        s = merge_sps(pcs, sps, cls, 4, false, below, 2, false, NATIVE_MODE_DEFAULT);
        CHECK(s->failed);
        CHECK(strcmp(render(s), "0x10,0x30,a," MERGE_FAILED_FUNCTION) == 0);
        free(s);
}

/* Groups whose anchors lie above the frames walked go at the root side;
 * a group the Python walk was cut inside goes at the next named loop
 * frame, else right after the groups placed. */
static void test_anchor_leftover(void)
{
        const uint64_t pcs[] = {0x10, 0x20, 0x30};
        const uint64_t sps[] = {0x1000, 0x1100, 0x1200};
        const enum native_class cls[] = {O, I, O};
        const enum native_class named[] = {O, I, E};
        const struct py_item items[] = {PY("a"), ANCHOR(0x1150), PY("b"), ANCHOR(0x1280)};
        const struct py_item cut[] = {PY("a"), ANCHOR(0x1050), PY("b")};
        struct merged_stack *s;

        s = merge_sps(pcs, sps, cls, 3, true, items, 4, false, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,a,0x30,b") == 0);
        free(s);
        s = merge_sps(pcs, sps, cls, 3, false, cut, 3, true, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && s->truncated);
        CHECK(strcmp(render(s), "a,b,0x30") == 0);
        free(s);
        s = merge_sps(pcs, sps, named, 3, false, cut, 3, true, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && s->truncated);
        CHECK(strcmp(render(s), "a,b") == 0);
        free(s);
}

/* An unknown stack pointer or a missing anchor: by name, as before. */
static void test_anchor_unusable(void)
{
        const uint64_t pcs[] = {0x10, 0x20};
        const uint64_t sps[] = {0x1000, 0};
        const enum native_class cls[] = {O, E};
        const struct py_item items[] = {PY("a"), ANCHOR(0x1010)};
        const struct py_item no_anchor[] = {PY("a"), BOUNDARY};
        const uint64_t good[] = {0x1000, 0x1100};
        struct merged_stack *s;

        s = merge_sps(pcs, sps, cls, 2, false, items, 2, false, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && strcmp(render(s), "0x10,a") == 0);
        free(s);
        s = merge_sps(pcs, good, cls, 2, false, no_anchor, 2, false, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && strcmp(render(s), "0x10,a") == 0);
        free(s);
        /* With both, the anchor decides: 0x1010 is in the leaf's frame. */
        s = merge_sps(pcs, good, cls, 2, false, items, 2, false, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && strcmp(render(s), "a") == 0);
        free(s);
}

static void test_eval_names(void)
{
        CHECK(stack_merge__is_eval_function("_PyEval_EvalFrameDefault"));
        CHECK(stack_merge__is_eval_function("_PyEval_EvalFrameDefault.cold"));
        CHECK(!stack_merge__is_eval_function("_PyEval_EvalFrameDefaultX"));
        CHECK(!stack_merge__is_eval_function("PyEval_EvalFrame"));
        CHECK(!stack_merge__is_eval_function(""));
        CHECK(!stack_merge__is_eval_function(NULL));
}

int main(void)
{
        test_callback();
        test_one_per_frame();
        test_empty_group();
        test_too_many_evals();
        test_entering_eval();
        test_leftover();
        test_torn_walk();
        test_anchor_stripped_callback();
        test_anchor_over_names();
        test_anchor_mismatch();
        test_anchor_leftover();
        test_anchor_unusable();
        test_eval_names();
        printf("ok\n");
        return 0;
}
