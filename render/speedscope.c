/* speedscope.c — see speedscope.h.
 *
 * Frames are deduplicated with the same identity the collapsed and SVG
 * outputs use: a native frame is its function (a function called from two
 * lines is one frame), a Python frame its function and line (as py-spy).
 * Stacks are root first, weights are sample values (ns of CPU, or of wall
 * time with --wall; unit "nanoseconds").  The profile per thread is named "NAME (tid T, pid P)". */
#include "render/speedscope.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_text.h"
#include "pprof/profile_file.h"
#include "render/profile_stacks.h"
#include "util/cleanup.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct ss_frame_key {
        uint64_t function_id; /* 0: empty slot */
        int64_t line;
        uint32_t index;
};

struct ss_thread {
        int64_t pid, tid;
        char *name;
        uint32_t *frames; /* every sample's frame indices, back to back */
        size_t n_frames, frames_capacity;
        size_t *ends; /* sample i is frames[ends[i-1] .. ends[i]) */
        int64_t *weights;
        size_t n_samples, samples_capacity;
        int64_t total;
};

struct speedscope {
        struct ss_frame_key *keys; /* open addressing, power-of-two size */
        size_t keys_capacity;
        struct ps_frame *frames; /* copies of the frames (strings: builder-owned) */
        size_t n_frames, frames_capacity;
        struct ss_thread *threads;
        size_t n_threads, threads_capacity;
};

static int grow_array(void **items, size_t *capacity, size_t needed, size_t size)
{
        size_t n = *capacity ? *capacity : 64;
        void *bigger;

        if (needed <= *capacity)
                return 0;
        while (n < needed)
                n *= 2;
        bigger = realloc(*items, n * size);
        if (!bigger)
                return -ENOMEM;
        *items = bigger;
        *capacity = n;
        return 0;
}

static uint64_t key_hash(uint64_t function_id, int64_t line)
{
        uint64_t h = function_id * 0x9e3779b97f4a7c15ull ^ (uint64_t)line * 0xc2b2ae3d27d4eb4full;

        return h ^ (h >> 29);
}

static int rehash(struct speedscope *s)
{
        size_t capacity = s->keys_capacity ? s->keys_capacity * 2 : 1024;
        struct ss_frame_key *keys = calloc(capacity, sizeof(*keys));

        if (!keys)
                return -ENOMEM;
        for (size_t i = 0; i < s->keys_capacity; i++) {
                const struct ss_frame_key *k = &s->keys[i];
                if (!k->function_id)
                        continue;
                size_t slot = key_hash(k->function_id, k->line) & (capacity - 1);
                while (keys[slot].function_id)
                        slot = (slot + 1) & (capacity - 1);
                keys[slot] = *k;
        }
        free(s->keys);
        s->keys = keys;
        s->keys_capacity = capacity;
        return 0;
}

/* The shared frame index of `frame`, added on first sight; -ENOMEM. */
static int64_t frame_index(struct speedscope *s, const struct ps_frame *frame)
{
        int64_t line = frame->python ? frame->line : 0;
        size_t slot;

        if ((s->n_frames + 1) * 2 > s->keys_capacity && rehash(s) < 0)
                return -ENOMEM;
        slot = key_hash(frame->function_id, line) & (s->keys_capacity - 1);
        for (; s->keys[slot].function_id; slot = (slot + 1) & (s->keys_capacity - 1))
                if (s->keys[slot].function_id == frame->function_id && s->keys[slot].line == line)
                        return s->keys[slot].index;
        if (grow_array((void **)&s->frames, &s->frames_capacity, s->n_frames + 1,
                       sizeof(*s->frames)) < 0)
                return -ENOMEM;
        s->frames[s->n_frames] = *frame;
        s->keys[slot] = (struct ss_frame_key){frame->function_id, line, (uint32_t)s->n_frames};
        return (int64_t)s->n_frames++;
}

static struct ss_thread *thread_for(struct speedscope *s, const struct ps_sample *sample)
{
        struct ss_thread *thread;

        for (size_t i = 0; i < s->n_threads; i++)
                if (s->threads[i].pid == sample->pid && s->threads[i].tid == sample->tid)
                        return &s->threads[i];
        if (grow_array((void **)&s->threads, &s->threads_capacity, s->n_threads + 1,
                       sizeof(*s->threads)) < 0)
                return NULL;
        thread = &s->threads[s->n_threads];
        *thread = (struct ss_thread){.pid = sample->pid, .tid = sample->tid};
        if (asprintf(&thread->name, "%s (tid %lld, pid %lld)",
                     *sample->thread_name ? sample->thread_name : "thread", (long long)sample->tid,
                     (long long)sample->pid) < 0)
                return NULL;
        s->n_threads++;
        return thread;
}

static int speedscope__add(void *arg, const struct ps_sample *sample)
{
        struct speedscope *s = arg;
        struct ss_thread *thread = thread_for(s, sample);

        if (!thread ||
            grow_array((void **)&thread->frames, &thread->frames_capacity,
                       thread->n_frames + sample->n_frames, sizeof(*thread->frames)) < 0 ||
            grow_array((void **)&thread->ends, &thread->samples_capacity, thread->n_samples + 1,
                       sizeof(*thread->ends)) < 0)
                return -ENOMEM;
        /* weights share samples_capacity: grow it to the same size. */
        int64_t *weights = realloc(thread->weights, thread->samples_capacity * sizeof(*weights));
        if (!weights)
                return -ENOMEM;
        thread->weights = weights;
        for (size_t i = 0; i < sample->n_frames; i++) {
                int64_t index = frame_index(s, &sample->frames[i]);
                if (index < 0)
                        return (int)index;
                thread->frames[thread->n_frames++] = (uint32_t)index;
        }
        thread->ends[thread->n_samples] = thread->n_frames;
        thread->weights[thread->n_samples++] = sample->value;
        thread->total += sample->value;
        return 0;
}

static void print_frames(const struct speedscope *s, FILE *out)
{
        fputs("\"shared\":{\"frames\":[", out);
        for (size_t i = 0; i < s->n_frames; i++) {
                const struct ps_frame *frame = &s->frames[i];
                fputs(i ? ",{\"name\":" : "{\"name\":", out);
                json_text__string(out, frame->function);
                if (*frame->file) {
                        fputs(",\"file\":", out);
                        json_text__string(out, frame->file);
                }
                if (frame->python && frame->line > 0)
                        fprintf(out, ",\"line\":%lld", (long long)frame->line);
                fputc('}', out);
        }
        fputs("]}", out);
}

static void print_thread(const struct ss_thread *thread, FILE *out)
{
        size_t start = 0;

        fputs("{\"type\":\"sampled\",\"name\":", out);
        json_text__string(out, thread->name);
        fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%lld,\"samples\":[",
                (long long)thread->total);
        for (size_t i = 0; i < thread->n_samples; i++) {
                fputs(i ? ",[" : "[", out);
                for (size_t f = start; f < thread->ends[i]; f++)
                        fprintf(out, f > start ? ",%u" : "%u", thread->frames[f]);
                fputc(']', out);
                start = thread->ends[i];
        }
        fputs("],\"weights\":[", out);
        for (size_t i = 0; i < thread->n_samples; i++)
                fprintf(out, i ? ",%lld" : "%lld", (long long)thread->weights[i]);
        fputs("]}", out);
}

static int speedscope__render(const struct speedscope *s, char **text, size_t *size)
{
        _cleanup_fclose_ FILE *out = open_memstream(text, size);

        if (!out)
                return -ENOMEM;
        fputs("{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",", out);
        print_frames(s, out);
        fputs(",\"profiles\":[", out);
        for (size_t i = 0; i < s->n_threads; i++) {
                if (i)
                        fputc(',', out);
                print_thread(&s->threads[i], out);
        }
        fputs("],\"name\":\"splunk-profd\",\"activeProfileIndex\":0,"
              "\"exporter\":\"splunk-profd " PROFD_VERSION "\"}\n",
              out);
        return fclose(take_ptr(out)) == 0 ? 0 : -ENOMEM;
}

static void speedscope__release(struct speedscope *s)
{
        for (size_t i = 0; i < s->n_threads; i++) {
                free(s->threads[i].name);
                free(s->threads[i].frames);
                free(s->threads[i].ends);
                free(s->threads[i].weights);
        }
        free(s->threads);
        free(s->frames);
        free(s->keys);
}

int speedscope__write(const struct profile_builder *builder, const char *path)
{
        struct speedscope s = {0};
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = profile_stacks__each(builder, speedscope__add, &s);

        if (r == 0)
                r = speedscope__render(&s, &text, &size);
        if (r == 0)
                r = profile_file__write_bytes(path, (const uint8_t *)text, size);
        speedscope__release(&s);
        return r;
}
