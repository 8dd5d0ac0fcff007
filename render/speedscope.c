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

#include "util/array.h"
#include "util/json_text.h"
#include "pprof/profile_file.h"
#include "render/profile_stacks.h"
#include "util/cleanup.h"
#include "util/hash.h"
#include "util/index_map.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct ss_thread {
        int64_t pid, tid;
        char *name;
        uint32_t *frames; /* every sample's frame indices, back to back */
        size_t n_frames, frames_capacity;
        size_t *ends; /* sample i is frames[ends[i-1] .. ends[i]) */
        size_t ends_capacity;
        int64_t *weights; /* sample i weighs weights[i] */
        size_t weights_capacity;
        size_t n_samples;
        int64_t total;
};

struct speedscope {
        struct index_map frame_map; /* frame identity -> index in frames */
        struct ps_frame *frames;    /* copies of the frames (strings: builder-owned) */
        size_t n_frames, frames_capacity;
        struct ss_thread *threads;
        size_t n_threads, threads_capacity;
};

/* A frame's identity: native frames by function, Python frames by
 * function and line. */
static int64_t frame_line(const struct ps_frame *frame)
{
        return frame->python ? frame->line : 0;
}

static uint64_t frame_hash(const struct ps_frame *frame)
{
        return hash__combine(hash__combine(4, frame->function_id), (uint64_t)frame_line(frame));
}

struct ss_frame_key {
        const struct speedscope *s;
        const struct ps_frame *frame;
};

static bool ss_frame_key__equal(const void *context, uint32_t index)
{
        const struct ss_frame_key *key = context;
        const struct ps_frame *known = &key->s->frames[index];

        return known->function_id == key->frame->function_id &&
               frame_line(known) == frame_line(key->frame);
}

/* The shared frame index of `frame`, added on first sight; -ENOMEM. */
static int64_t frame_index(struct speedscope *s, const struct ps_frame *frame)
{
        struct ss_frame_key key = {s, frame};
        uint64_t hash = frame_hash(frame);
        uint32_t found = index_map__find(&s->frame_map, hash, ss_frame_key__equal, &key);

        if (found != INDEX_MAP_NONE)
                return found;
        if (ARRAY_RESERVE(s->frames, s->frames_capacity, s->n_frames + 1) < 0 ||
            index_map__insert(&s->frame_map, hash, (uint32_t)s->n_frames) < 0)
                return -ENOMEM;
        s->frames[s->n_frames] = *frame;
        return (int64_t)s->n_frames++;
}

static struct ss_thread *thread_for(struct speedscope *s, const struct ps_sample *sample)
{
        struct ss_thread *thread;

        for (size_t i = 0; i < s->n_threads; i++)
                if (s->threads[i].pid == sample->pid && s->threads[i].tid == sample->tid)
                        return &s->threads[i];
        if (ARRAY_RESERVE(s->threads, s->threads_capacity, s->n_threads + 1) < 0)
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
            ARRAY_RESERVE(thread->frames, thread->frames_capacity,
                          thread->n_frames + sample->n_frames) < 0 ||
            ARRAY_RESERVE(thread->ends, thread->ends_capacity, thread->n_samples + 1) < 0 ||
            ARRAY_RESERVE(thread->weights, thread->weights_capacity, thread->n_samples + 1) < 0)
                return -ENOMEM;
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
        index_map__free(&s->frame_map);
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
