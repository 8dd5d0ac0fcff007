/* test_python_merge.c — interleaving native and Python frames
 * (unwind/stack_merge.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/stack_merge.h"

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

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
        const uint64_t pcs[] = {0x10, 0x20, 0x30, 0x40};
        const enum native_class cls[] = {O, E, E, O};
        const struct py_item items[] = {PY("a"), PY("b"), BOUNDARY};
        struct merged_stack *s = merge(pcs, cls, 4, false, items, 3, NATIVE_MODE_DEFAULT);

        CHECK(s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,a,b," MERGE_FAILED_FUNCTION) == 0);
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
        /* No loop frame at all: the native walk never reached Python. */
        s = merge(pcs, no_eval, 2, false, items, 4, NATIVE_MODE_DEFAULT);
        CHECK(!s->failed && s->truncated);
        CHECK(strcmp(render(s), "0x10,0x20,a,b") == 0);
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
        test_leftover();
        test_eval_names();
        printf("ok\n");
        return 0;
}
