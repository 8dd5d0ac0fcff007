/* sample_recorder.c — see sample_recorder.h.
 *
 * Labels follow Splunk's pprof conventions (numeric thread.os.id,
 * source.event.time in ms, source.event.period in ms, string
 * thread.stack.truncated = "true" when the stack is incomplete, numeric
 * thread.id and string trace_id/span_id when the caller knows them), plus
 * thread.state, process.pid and, for Python threads, thread.gil, which
 * pprof tools can filter on.  thread.name is the Python thread name when
 * the caller knows it, else the OS name. */
#include "pprof/sample_recorder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof/profile_builder.h"
#include "symbolize/symbolizer.h"
#include "unwind/stack_merge.h"
#include "util/cleanup.h"

#define RECORD_MAX_FRAMES   4096
#define RECORD_LOCAL_FRAMES 256 /* frames whose ids and keys fit on the stack */

static uint64_t mapping_id(struct sample_recorder *recorder, const struct mapped_file *file)
{
        struct pb_mapping mapping;

        if (!file)
                return 0;
        if (file->serial == recorder->last_mapping_serial)
                return recorder->last_mapping_id;
        mapping = (struct pb_mapping){
            .start = file->start,
            .limit = file->limit,
            .offset = file->offset,
            .filename = file->path,
            .build_id = file->build_id_hex,
            .has_functions = true,
            .has_filenames = file->has_debug_info,
            .has_line_numbers = file->has_debug_info,
            .has_inline_frames = file->has_debug_info,
        };
        recorder->last_mapping_serial = file->serial;
        recorder->last_mapping_id = profile_builder__mapping(recorder->builder, &mapping);
        return recorder->last_mapping_id;
}

static uint64_t location_id(struct sample_recorder *recorder, struct address_space *space,
                            uint64_t address)
{
        struct symbolized_pc symbolized;
        struct pb_line lines[SYMBOL_MAX_INLINE];
        char unknown[32];

        if (space) {
                address_space__symbolize(space, address, &symbolized);
        } else {
                symbolized = (struct symbolized_pc){.address = address, .n_lines = 1};
                symbolized.lines[0] = (struct symbol_line){.function = "", .file = ""};
        }
        for (size_t i = 0; i < symbolized.n_lines; i++) {
                const struct symbol_line *line = &symbolized.lines[i];
                lines[i] = (struct pb_line){
                    .function = line->function,
                    .filename = line->file,
                    .line = line->line > 0 ? line->line : -1,
                };
        }
        if (symbolized.n_lines == 1 && !*lines[0].function) {
                /* Keep unknown frames distinguishable, as pprof tools do. */
                snprintf(unknown, sizeof(unknown), "0x%llx", (unsigned long long)address);
                lines[0].function = unknown;
        }
        return profile_builder__location(recorder->builder,
                                         mapping_id(recorder, symbolized.mapping), address, lines,
                                         symbolized.n_lines);
}

static uint64_t cached_location_id(struct sample_recorder *recorder, struct address_space *space,
                                   struct location_cache *cache, uint64_t address)
{
        uint64_t id = cache ? location_cache__get(cache, address) : 0;

        if (id)
                return id;
        id = location_id(recorder, space, address);
        if (cache)
                location_cache__put(cache, address, id);
        return id;
}

void sample_recorder__add_main_mapping(struct sample_recorder *recorder,
                                       struct address_space *space, uint64_t address)
{
        if (space)
                (void)mapping_id(recorder, address_space__mapping_at(space, address));
}

#define MAX_LABELS (13 + THREAD_CONTEXT_MAX_ATTRS)

/* Fills `labels` (room for MAX_LABELS); returns how many. */
static size_t sample_labels(const struct sample_recorder *recorder,
                            const struct sample_record *record, bool truncated,
                            struct pb_label *labels)
{
        size_t n = 0;

        labels[n++] = (struct pb_label){.key = "source.event.time",
                                        .num = (int64_t)(record->time_ns / 1000000u)};
        labels[n++] = (struct pb_label){.key = "source.event.period", .num = recorder->period_ms};
        if (record->thread_id)
                labels[n++] = (struct pb_label){.key = "thread.id", .num = record->thread_id};
        labels[n++] = (struct pb_label){.key = "thread.os.id", .num = record->tid};
        labels[n++] = (struct pb_label){
            .key = "thread.name",
            .str = record->python_thread_name ? record->python_thread_name : record->thread_name};
        labels[n++] = (struct pb_label){.key = "thread.state", .str = record->thread_state};
        labels[n++] = (struct pb_label){.key = "process.pid", .num = record->pid};
        if (record->gil)
                labels[n++] = (struct pb_label){.key = "thread.gil", .str = record->gil};
        if (record->asyncio_task)
                labels[n++] =
                    (struct pb_label){.key = "asyncio.task.name", .str = record->asyncio_task};
        if (record->trace_id && record->span_id) {
                labels[n++] = (struct pb_label){.key = "trace_id", .str = record->trace_id};
                labels[n++] = (struct pb_label){.key = "span_id", .str = record->span_id};
        }
        if (truncated)
                labels[n++] = (struct pb_label){.key = "thread.stack.truncated", .str = "true"};
        for (size_t i = 0; record->span_attributes && i < record->span_attributes->n_attrs; i++) {
                const char *key = record->span_attributes->keys[i];
                bool taken = false;
                for (size_t j = 0; j < n && !taken; j++)
                        taken = strcmp(labels[j].key, key) == 0;
                if (!taken)
                        labels[n++] = (struct pb_label){.key = key,
                                                        .str = record->span_attributes->values[i]};
        }
        return n;
}

/* A Python frame: mapping 0, address 0, one Line (function = system name =
 * co_qualname or co_name, file = co_filename, line or -1). */
static uint64_t python_location_id(struct sample_recorder *recorder,
                                   const struct merged_frame *frame)
{
        struct pb_line line = {
            .function = frame->function,
            .filename = frame->filename,
            .line = frame->line > 0 ? frame->line : -1,
        };

        return profile_builder__location(recorder->builder, 0, 0, &line, 1);
}

/* The Location of frame i: the merged Python + native stack when the
 * sample has one, else the native stack. */
static uint64_t frame_location_id(struct sample_recorder *recorder, struct address_space *space,
                                  struct location_cache *cache, const struct sample_record *record,
                                  size_t i)
{
        const struct merged_stack *merged = record->merged;

        if (!merged || merged->n == 0)
                return cached_location_id(recorder, space, cache, record->stack->pcs[i]);
        if (merged->frames[i].function)
                return python_location_id(recorder, &merged->frames[i]);
        return cached_location_id(recorder, space, cache, merged->frames[i].pc);
}

/* The key of frame i for the stack memo (location_cache.h): a native
 * frame is its address, a Python frame its interned name and file (both
 * live as long as the target's cache) and its line. */
static void frame_key(const struct sample_record *record, size_t i, uint64_t *key)
{
        const struct merged_stack *merged = record->merged;
        const struct merged_frame *frame = merged && merged->n > 0 ? &merged->frames[i] : NULL;

        if (frame && frame->function) {
                key[0] = (uint64_t)(uintptr_t)frame->function;
                key[1] = (uint64_t)(uintptr_t)(frame->filename ? frame->filename : "");
                key[2] = (uint64_t)frame->line;
        } else {
                key[0] = frame ? frame->pc : record->stack->pcs[i];
                key[1] = 0; /* never a Python frame's file */
                key[2] = 0;
        }
}

int sample_recorder__record(struct sample_recorder *recorder, struct address_space *space,
                            struct location_cache *cache, const struct sample_record *record)
{
        bool is_merged = record->merged && record->merged->n > 0;
        size_t total = is_merged ? record->merged->n : record->stack->n_pcs;
        bool truncated = is_merged ? record->merged->truncated : record->stack->truncated;
        size_t n = total < RECORD_MAX_FRAMES ? total : RECORD_MAX_FRAMES;
        bool memo = cache && n <= LOCATION_STACK_MAX;
        uint64_t local_ids[RECORD_LOCAL_FRAMES],
            local_keys[RECORD_LOCAL_FRAMES * LOCATION_STACK_WORDS];
        _cleanup_free_ uint64_t *heap_ids = NULL;
        _cleanup_free_ uint64_t *heap_keys = NULL;
        uint64_t *ids = local_ids, *keys = local_keys;
        const uint64_t *known = NULL;
        uint64_t hash = 0;
        /* samples/count, cpu/nanoseconds, wall/nanoseconds: a builder with
         * fewer sample types (none: the Splunk export) takes the first. */
        int64_t values[3] = {1, record->cpu_ns, record->wall_ns};
        struct pb_label labels[MAX_LABELS];
        size_t n_labels = sample_labels(recorder, record, truncated || n < total, labels);

        if (n > RECORD_LOCAL_FRAMES) {
                ids = heap_ids = malloc(n * sizeof(*ids));
                keys = heap_keys = memo ? malloc(n * LOCATION_STACK_WORDS * sizeof(*keys)) : NULL;
                if (!ids || (memo && !keys))
                        return -ENOMEM;
        }
        if (cache && space)
                location_cache__validate(cache, address_space__generation(space));
        if (memo) {
                for (size_t i = 0; i < n; i++)
                        frame_key(record, i, &keys[i * LOCATION_STACK_WORDS]);
                hash = location_cache__stack_hash(keys, n);
                known = location_cache__get_stack(cache, hash, keys, n);
        }
        if (known)
                return profile_builder__add_sample(recorder->builder, known, n, values, labels,
                                                   n_labels);
        for (size_t i = 0; i < n; i++)
                ids[i] = frame_location_id(recorder, space, cache, record, i);
        if (memo)
                location_cache__put_stack(cache, hash, keys, ids, n);
        return profile_builder__add_sample(recorder->builder, ids, n, values, labels, n_labels);
}
