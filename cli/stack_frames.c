/* stack_frames.c — see stack_frames.h.
 *
 * Symbolization here goes through the same build-id keyed caches as the
 * profile builder's path (address_space__symbolize), so `top` at 100 Hz
 * costs one hash lookup per frame after the first second. */
#include "cli/stack_frames.h"

#include <stdio.h>

#include "engine/sample_sink.h"
#include "pprof/sample_recorder.h"
#include "symbolize/symbolizer.h"
#include "unwind/stack_merge.h"

struct walk {
        stack_frame_fn fn;
        void *arg;
        size_t count;
        bool stopped;
};

static void walk__emit(struct walk *walk, const struct stack_frame *frame)
{
        if (walk->stopped)
                return;
        walk->count++;
        walk->stopped = !walk->fn(walk->arg, frame);
}

static void walk__native(struct walk *walk, struct address_space *space, uint64_t pc)
{
        struct symbolized_pc symbolized = {.n_lines = 0};
        char unknown[32];

        if (space)
                address_space__symbolize(space, pc, &symbolized);
        if (symbolized.n_lines == 0) {
                symbolized.n_lines = 1;
                symbolized.lines[0] = (struct symbol_line){.function = "", .file = ""};
        }
        for (size_t i = 0; i < symbolized.n_lines && !walk->stopped; i++) {
                const struct symbol_line *line = &symbolized.lines[i];
                struct stack_frame frame = {
                    .function = line->function,
                    .file = line->file ? line->file : "",
                    .line = line->line,
                    .pc = pc,
                    .module = symbolized.mapping ? symbolized.mapping->path : "",
                    .inlined = i + 1 < symbolized.n_lines,
                };
                if (!frame.function || !*frame.function) {
                        /* As the profile does: unknown frames stay distinct. */
                        snprintf(unknown, sizeof(unknown), "0x%llx", (unsigned long long)pc);
                        frame.function = unknown;
                }
                walk__emit(walk, &frame);
        }
}

static void walk__python(struct walk *walk, const struct merged_frame *merged)
{
        struct stack_frame frame = {
            .function = merged->function,
            .file = merged->filename ? merged->filename : "",
            .line = merged->line,
            .module = "",
            .python = true,
        };

        walk__emit(walk, &frame);
}

size_t stack_frames__walk(const struct sample_event *event, stack_frame_fn fn, void *arg)
{
        const struct sample_record *record = event->record;
        struct walk walk = {.fn = fn, .arg = arg};

        if (record->merged && record->merged->n > 0) {
                for (size_t i = 0; i < record->merged->n && !walk.stopped; i++) {
                        const struct merged_frame *frame = &record->merged->frames[i];
                        if (frame->function)
                                walk__python(&walk, frame);
                        else
                                walk__native(&walk, event->space, frame->pc);
                }
                return walk.count;
        }
        for (size_t i = 0; i < record->stack->n_pcs && !walk.stopped; i++)
                walk__native(&walk, event->space, record->stack->pcs[i]);
        return walk.count;
}

bool stack_frames__truncated(const struct sample_event *event)
{
        const struct sample_record *record = event->record;

        if (record->merged && record->merged->n > 0)
                return record->merged->truncated;
        return record->stack->truncated;
}
