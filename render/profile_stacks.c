/* profile_stacks.c — see profile_stacks.h.  Reads the builder's tables
 * directly (profile_builder_internal.h) rather than decoding the encoded
 * pprof: no second copy of the profile, and no protobuf round trip. */
#include "render/profile_stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pprof/profile_builder_internal.h"
#include "util/array.h"
#include "util/cleanup.h"

static const char *pb_string(const struct profile_builder *builder, int64_t index)
{
        if (index <= 0 || (size_t)index >= builder->strings.count)
                return "";
        return builder->strings.strings[index];
}

static int64_t sample_value(const struct profile_builder *builder, size_t index)
{
        if (builder->n_sample_types == 0)
                return 1;
        return builder->values[index * builder->n_sample_types + builder->default_sample_type];
}

/* thread.os.id, process.pid and thread.name of one sample. */
static void sample_labels(const struct profile_builder *builder,
                          const struct pb_sample_entry *entry, struct ps_sample *out)
{
        for (size_t i = 0; i < entry->n_labels; i++) {
                const struct pb_label_entry *label = &builder->labels[entry->first_label + i];
                const char *key = pb_string(builder, label->key);
                if (strcmp(key, "thread.os.id") == 0)
                        out->tid = label->num;
                else if (strcmp(key, "process.pid") == 0)
                        out->pid = label->num;
                else if (strcmp(key, "thread.name") == 0)
                        out->thread_name = pb_string(builder, label->str);
        }
}

/* Appends the frames of one Location, outermost line first. */
static size_t add_location(const struct profile_builder *builder, uint64_t location_id,
                           struct ps_frame *frames, size_t n)
{
        const struct pb_location_entry *location;

        if (location_id == 0 || location_id > builder->n_locations)
                return n;
        location = &builder->locations[location_id - 1];
        for (size_t l = location->n_lines; l-- > 0;) {
                const struct pb_line_entry *line = &builder->lines[location->first_line + l];
                const struct pb_function_entry *function =
                    &builder->functions[line->function_id - 1];
                frames[n++] = (struct ps_frame){
                    .function = pb_string(builder, function->name),
                    .file = pb_string(builder, function->filename),
                    .line = line->line,
                    .function_id = line->function_id,
                    .python = location->mapping_id == 0 && location->address == 0,
                };
        }
        return n;
}

/* Frames needed for one sample: the sum of its Locations' lines. */
static size_t frames_needed(const struct profile_builder *builder,
                            const struct pb_sample_entry *entry)
{
        size_t n = 0;

        for (size_t i = 0; i < entry->n_locations; i++) {
                uint64_t id = builder->sample_locations[entry->first_location + i];
                if (id > 0 && id <= builder->n_locations)
                        n += builder->locations[id - 1].n_lines;
        }
        return n;
}

int profile_stacks__each(const struct profile_builder *builder, profile_stack_fn fn, void *arg)
{
        _cleanup_free_ struct ps_frame *frames = NULL;
        size_t capacity = 0;

        for (size_t s = 0; s < builder->n_samples; s++) {
                const struct pb_sample_entry *entry = &builder->samples[s];
                size_t n = 0;
                if (sample_value(builder, s) == 0)
                        continue; /* no CPU time: not part of what is shown */
                if (ARRAY_RESERVE(frames, capacity, frames_needed(builder, entry) + 1) < 0)
                        return -ENOMEM;
                for (size_t i = entry->n_locations; i-- > 0;)
                        n = add_location(builder,
                                         builder->sample_locations[entry->first_location + i],
                                         frames, n);
                struct ps_sample sample = {
                    .frames = frames,
                    .n_frames = n,
                    .value = sample_value(builder, s),
                    .thread_name = "",
                };
                sample_labels(builder, entry, &sample);
                int r = fn(arg, &sample);
                if (r < 0)
                        return r;
        }
        return 0;
}
