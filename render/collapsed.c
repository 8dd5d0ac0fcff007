/* collapsed.c — see collapsed.h.
 *
 * Every sample's stack is rendered to its line text; the lines are sorted
 * and equal neighbours are summed.  Sorting costs O(n log n) in samples,
 * which is fine at the end of a run, and keeps the output deterministic
 * (flamegraph.pl sorts too).  The file is written in one go through
 * profile_file__write_bytes, so readers never see half of it. */
#include "render/collapsed.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/frame_label.h"
#include "pprof/profile_file.h"
#include "render/profile_stacks.h"
#include "util/array.h"
#include "util/cleanup.h"

#define LABEL_MAX 1024

struct collapsed_line {
        char *stack;
        int64_t count;
};

struct collapsed {
        struct collapsed_line *lines;
        size_t n, capacity;
        bool threads; /* each stack starts with "NAME (TID)" */
};

/* The thread's root frame, as py-spy's --threads writes it: the name
 * (threading's for Python threads, else comm) and the OS thread id; a
 * frame label, so a ';' in a thread name cannot forge a frame. */
static void thread_label(const struct ps_sample *sample, char *out, size_t size)
{
        char name[LABEL_MAX];

        snprintf(name, sizeof(name), "%s (%lld)",
                 sample->thread_name && *sample->thread_name ? sample->thread_name : "thread",
                 (long long)sample->tid);
        frame_label__format(&(struct ps_frame){.function = name, .file = ""}, out, size);
}

/* "a;b;c" for one sample ("thread (tid);a;b;c" with `threads`),
 * malloc'd; NULL on ENOMEM. */
static char *stack_text(const struct ps_sample *sample, bool threads)
{
        char *text = NULL, label[LABEL_MAX];
        size_t size = 0;
        _cleanup_fclose_ FILE *out = open_memstream(&text, &size);

        if (!out)
                return NULL;
        if (threads) {
                thread_label(sample, label, sizeof(label));
                fprintf(out, "%s;", label);
        }
        for (size_t i = 0; i < sample->n_frames; i++) {
                frame_label__format(&sample->frames[i], label, sizeof(label));
                fprintf(out, "%s%s", i ? ";" : "", label);
        }
        if (sample->n_frames == 0)
                fputs("[unknown]", out);
        if (fclose(take_ptr(out)) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

static int collapsed__add(void *arg, const struct ps_sample *sample)
{
        struct collapsed *c = arg;

        if (ARRAY_RESERVE(c->lines, c->capacity, c->n + 1) < 0)
                return -ENOMEM;
        c->lines[c->n].stack = stack_text(sample, c->threads);
        if (!c->lines[c->n].stack)
                return -ENOMEM;
        c->lines[c->n++].count = sample->value;
        return 0;
}

static int compare_lines(const void *a, const void *b)
{
        return strcmp(((const struct collapsed_line *)a)->stack,
                      ((const struct collapsed_line *)b)->stack);
}

static void collapsed__release(struct collapsed *c)
{
        for (size_t i = 0; i < c->n; i++)
                free(c->lines[i].stack);
        free(c->lines);
}

/* Sorted, merged lines into a malloc'd text. */
static int collapsed__render(struct collapsed *c, char **text, size_t *size)
{
        _cleanup_fclose_ FILE *out = open_memstream(text, size);

        if (!out)
                return -ENOMEM;
        qsort(c->lines, c->n, sizeof(*c->lines), compare_lines);
        for (size_t i = 0; i < c->n;) {
                int64_t count = 0;
                size_t j = i;
                for (; j < c->n && strcmp(c->lines[j].stack, c->lines[i].stack) == 0; j++)
                        count += c->lines[j].count;
                fprintf(out, "%s %lld\n", c->lines[i].stack, (long long)count);
                i = j;
        }
        return fclose(take_ptr(out)) == 0 ? 0 : -ENOMEM;
}

int collapsed__write(const struct profile_builder *builder, const char *path, bool threads)
{
        struct collapsed c = {.threads = threads};
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = profile_stacks__each(builder, collapsed__add, &c);

        if (r == 0)
                r = collapsed__render(&c, &text, &size);
        if (r == 0)
                r = profile_file__write_bytes(path, (const uint8_t *)text, size);
        collapsed__release(&c);
        return r;
}
