/* profile_builder.c — accumulates samples into the tables of a pprof
 * Profile.
 *
 * A CPU profile is highly repetitive: 100k samples may touch only a few
 * thousand distinct frames.  pprof expresses that with indirection (a
 * sample lists Location ids, a Location lists Lines, a Line names a
 * Function, and every string is an index into one string table), so the
 * builder's job is to find the existing id for each piece in O(1).  Each
 * table is a dense array, since that is what gets encoded and an id is
 * just position + 1, plus an index_map from the key's hash to the
 * position.  Keys are compared as integers after string interning, so
 * only strings are ever hashed by content.
 *
 * Samples are not merged: with no sample types (the Splunk layout) every
 * sample is one observation, and merging would need summable values.
 * Their location ids, values and labels go to flat arrays shared by all
 * samples, so adding one costs a few appends and no malloc of its own.
 *
 * Caller input comes from arbitrary profiled processes, so it is bounded:
 * a Location keeps at most PB_MAX_LINES lines (the innermost ones, as
 * given first), a sample at most PB_MAX_LOCATIONS frames (leaf side kept)
 * and PB_MAX_LABELS labels; NULL strings read as "", and location ids 0
 * (a failed profile_builder__location) or unknown ones are skipped, so
 * that the encoded profile stays valid for pprof. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"
#include "util/hash.h"
#include "pprof/profile_builder.h"
#include "pprof/profile_builder_internal.h"

static int profile_builder__value_type(struct profile_builder *builder, const char *type,
                                       const char *unit, struct pb_value_type *out)
{
        out->type = string_table__intern(&builder->strings, type);
        out->unit = string_table__intern(&builder->strings, unit);
        return out->type < 0 || out->unit < 0 ? -ENOMEM : 0;
}

static int profile_builder__apply_options(struct profile_builder *builder,
                                          const struct profile_builder_options *options)
{
        size_t i;

        builder->n_sample_types = options->n_sample_types;
        for (i = 0; i < options->n_sample_types; i++)
                if (profile_builder__value_type(builder, options->sample_type[i],
                                                options->sample_unit[i],
                                                &builder->sample_types[i]) < 0)
                        return -ENOMEM;
        builder->default_sample_type = options->default_sample_type;
        builder->has_period_type = options->period_type != NULL;
        if (builder->has_period_type &&
            profile_builder__value_type(builder, options->period_type, options->period_unit,
                                        &builder->period_type) < 0)
                return -ENOMEM;
        builder->period = options->period;
        builder->time_nanos = options->time_nanos;
        return 0;
}

/* NULL on allocation failure (errno ENOMEM) or more than
 * PB_MAX_SAMPLE_TYPES sample types (errno EINVAL).  NULL options give an
 * empty Splunk-style profile. */
struct profile_builder *profile_builder__new(const struct profile_builder_options *options)
{
        static const struct profile_builder_options no_options;
        struct profile_builder *builder;

        if (!options)
                options = &no_options;
        if (options->n_sample_types > PB_MAX_SAMPLE_TYPES ||
            (options->n_sample_types && options->default_sample_type >= options->n_sample_types)) {
                errno = EINVAL;
                return NULL;
        }
        builder = calloc(1, sizeof(*builder));
        if (!builder)
                return NULL;
        if (string_table__init(&builder->strings) < 0 ||
            profile_builder__apply_options(builder, options) < 0) {
                profile_builder__free(builder);
                errno = ENOMEM;
                return NULL;
        }
        return builder;
}

void profile_builder__free(struct profile_builder *builder)
{
        if (!builder)
                return;
        string_table__free(&builder->strings);
        free(builder->mappings);
        index_map__free(&builder->mapping_map);
        free(builder->functions);
        index_map__free(&builder->function_map);
        free(builder->locations);
        index_map__free(&builder->location_map);
        free(builder->lines);
        free(builder->samples);
        free(builder->sample_locations);
        free(builder->values);
        free(builder->labels);
        free(builder);
}

struct mapping_key {
        const struct profile_builder *builder;
        const struct pb_mapping_entry *entry;
};

static bool profile_builder__mapping_equal(const void *context, uint32_t index)
{
        const struct mapping_key *key = context;
        const struct pb_mapping_entry *a = key->entry, *b = &key->builder->mappings[index];

        return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
               a->filename == b->filename && a->build_id == b->build_id;
}

static uint64_t profile_builder__mapping_hash(const struct pb_mapping_entry *entry)
{
        uint64_t hash = hash__combine(1, entry->start);

        hash = hash__combine(hash, entry->limit);
        hash = hash__combine(hash, entry->offset);
        hash = hash__combine(hash, (uint64_t)entry->filename);
        return hash__combine(hash, (uint64_t)entry->build_id);
}

static uint64_t profile_builder__append_mapping(struct profile_builder *builder,
                                                const struct pb_mapping_entry *entry, uint64_t hash)
{
        size_t n = builder->n_mappings;

        if (ARRAY_RESERVE(builder->mappings, builder->mappings_capacity, n + 1) < 0)
                return 0;
        if (index_map__insert(&builder->mapping_map, hash, (uint32_t)n) < 0)
                return 0;
        builder->mappings[builder->n_mappings++] = *entry;
        return builder->n_mappings;
}

/* The id of an equal mapping, or a new one; 0 when out of memory.  The
 * has_* flags are not part of the key: the first mapping seen wins. */
uint64_t profile_builder__mapping(struct profile_builder *builder, const struct pb_mapping *mapping)
{
        struct pb_mapping_entry entry;
        struct mapping_key key = {builder, &entry};
        uint64_t hash;
        uint32_t index;

        if (!mapping)
                return 0;
        entry = (struct pb_mapping_entry){
            .start = mapping->start,
            .limit = mapping->limit,
            .offset = mapping->offset,
            .filename = string_table__intern(&builder->strings, mapping->filename),
            .build_id = string_table__intern(&builder->strings, mapping->build_id),
            .has_functions = mapping->has_functions,
            .has_filenames = mapping->has_filenames,
            .has_line_numbers = mapping->has_line_numbers,
            .has_inline_frames = mapping->has_inline_frames,
        };
        if (entry.filename < 0 || entry.build_id < 0)
                return 0;
        hash = profile_builder__mapping_hash(&entry);
        index = index_map__find(&builder->mapping_map, hash, profile_builder__mapping_equal, &key);
        if (index != INDEX_MAP_NONE)
                return (uint64_t)index + 1;
        return profile_builder__append_mapping(builder, &entry, hash);
}

struct function_key {
        const struct profile_builder *builder;
        const struct pb_function_entry *entry;
};

static bool profile_builder__function_equal(const void *context, uint32_t index)
{
        const struct function_key *key = context;
        const struct pb_function_entry *a = key->entry, *b = &key->builder->functions[index];

        return a->name == b->name && a->system_name == b->system_name && a->filename == b->filename;
}

static uint64_t profile_builder__append_function(struct profile_builder *builder,
                                                 const struct pb_function_entry *entry,
                                                 uint64_t hash)
{
        size_t n = builder->n_functions;

        if (ARRAY_RESERVE(builder->functions, builder->functions_capacity, n + 1) < 0)
                return 0;
        if (index_map__insert(&builder->function_map, hash, (uint32_t)n) < 0)
                return 0;
        builder->functions[builder->n_functions++] = *entry;
        return builder->n_functions;
}

/* The function id for one Line; 0 when out of memory. */
static uint64_t profile_builder__function(struct profile_builder *builder,
                                          const struct pb_line *line)
{
        struct pb_function_entry entry;
        struct function_key key = {builder, &entry};
        uint64_t hash;
        uint32_t index;

        entry.name = string_table__intern(&builder->strings, line->function);
        entry.system_name = line->system_name
                                ? string_table__intern(&builder->strings, line->system_name)
                                : entry.name;
        entry.filename = string_table__intern(&builder->strings, line->filename);
        if (entry.name < 0 || entry.system_name < 0 || entry.filename < 0)
                return 0;
        hash = hash__combine(hash__combine(2, (uint64_t)entry.name), (uint64_t)entry.system_name);
        hash = hash__combine(hash, (uint64_t)entry.filename);
        index =
            index_map__find(&builder->function_map, hash, profile_builder__function_equal, &key);
        if (index != INDEX_MAP_NONE)
                return (uint64_t)index + 1;
        return profile_builder__append_function(builder, &entry, hash);
}

struct location_key {
        const struct profile_builder *builder;
        uint64_t mapping_id, address;
        const struct pb_line_entry *lines;
        size_t n_lines;
};

static bool profile_builder__location_equal(const void *context, uint32_t index)
{
        const struct location_key *key = context;
        const struct pb_location_entry *entry = &key->builder->locations[index];
        const struct pb_line_entry *lines = &key->builder->lines[entry->first_line];
        size_t i;

        if (entry->mapping_id != key->mapping_id || entry->address != key->address ||
            entry->n_lines != key->n_lines)
                return false;
        for (i = 0; i < key->n_lines; i++)
                if (lines[i].function_id != key->lines[i].function_id ||
                    lines[i].line != key->lines[i].line)
                        return false;
        return true;
}

static uint64_t profile_builder__location_hash(const struct location_key *key)
{
        uint64_t hash = hash__combine(hash__combine(3, key->mapping_id), key->address);
        size_t i;

        for (i = 0; i < key->n_lines; i++) {
                hash = hash__combine(hash, key->lines[i].function_id);
                hash = hash__combine(hash, (uint64_t)key->lines[i].line);
        }
        return hash;
}

static uint64_t profile_builder__location_append(struct profile_builder *b,
                                                 const struct location_key *key, uint64_t hash)
{
        struct pb_location_entry *entry;

        if (ARRAY_RESERVE(b->locations, b->locations_capacity, b->n_locations + 1) < 0)
                return 0;
        if (ARRAY_RESERVE(b->lines, b->lines_capacity, b->n_lines + key->n_lines) < 0)
                return 0;
        if (index_map__insert(&b->location_map, hash, (uint32_t)b->n_locations) < 0)
                return 0;
        entry = &b->locations[b->n_locations++];
        *entry =
            (struct pb_location_entry){key->mapping_id, key->address, b->n_lines, key->n_lines};
        memcpy(&b->lines[b->n_lines], key->lines, key->n_lines * sizeof(*key->lines));
        b->n_lines += key->n_lines;
        return b->n_locations;
}

/* The id of an equal location, or a new one; 0 when out of memory or when
 * mapping_id names no mapping (pprof would reject the profile). */
uint64_t profile_builder__location(struct profile_builder *builder, uint64_t mapping_id,
                                   uint64_t address, const struct pb_line *lines, size_t n_lines)
{
        struct pb_line_entry entries[PB_MAX_LINES];
        struct location_key key = {builder, mapping_id, address, entries, 0};
        uint64_t hash;
        uint32_t index;

        if (mapping_id > builder->n_mappings || (n_lines && !lines))
                return 0;
        key.n_lines = n_lines < PB_MAX_LINES ? n_lines : PB_MAX_LINES;
        for (size_t i = 0; i < key.n_lines; i++) {
                entries[i].function_id = profile_builder__function(builder, &lines[i]);
                entries[i].line = lines[i].line;
                if (entries[i].function_id == 0)
                        return 0;
        }
        hash = profile_builder__location_hash(&key);
        index =
            index_map__find(&builder->location_map, hash, profile_builder__location_equal, &key);
        if (index != INDEX_MAP_NONE)
                return (uint64_t)index + 1;
        return profile_builder__location_append(builder, &key, hash);
}

static int profile_builder__reserve_sample(struct profile_builder *b, size_t n_locations,
                                           size_t n_labels)
{
        if (ARRAY_RESERVE(b->samples, b->samples_capacity, b->n_samples + 1) < 0)
                return -ENOMEM;
        if (ARRAY_RESERVE(b->sample_locations, b->sample_locations_capacity,
                          b->n_sample_locations + n_locations) < 0)
                return -ENOMEM;
        if (ARRAY_RESERVE(b->values, b->values_capacity, b->n_values + b->n_sample_types) < 0)
                return -ENOMEM;
        if (ARRAY_RESERVE(b->labels, b->labels_capacity, b->n_labels + n_labels) < 0)
                return -ENOMEM;
        return 0;
}

/* Appends the valid ids among location_ids; returns how many. */
static size_t profile_builder__append_locations(struct profile_builder *builder,
                                                const uint64_t *location_ids, size_t n_locations)
{
        uint64_t *out = &builder->sample_locations[builder->n_sample_locations];
        size_t n = 0;

        for (size_t i = 0; i < n_locations; i++)
                if (location_ids[i] != 0 && location_ids[i] <= builder->n_locations)
                        out[n++] = location_ids[i];
        builder->n_sample_locations += n;
        return n;
}

static int profile_builder__label(struct profile_builder *builder, const struct pb_label *label,
                                  struct pb_label_entry *out)
{
        *out = (struct pb_label_entry){0};
        out->key = string_table__intern(&builder->strings, label->key);
        if (label->str)
                out->str = string_table__intern(&builder->strings, label->str);
        else {
                out->num = label->num;
                out->num_unit = string_table__intern(&builder->strings, label->num_unit);
        }
        return out->key < 0 || out->str < 0 || out->num_unit < 0 ? -ENOMEM : 0;
}

/* Interns every label before committing any, so a failure leaves no half
 * sample behind. */
static int profile_builder__append_labels(struct profile_builder *builder,
                                          const struct pb_label *labels, size_t n_labels)
{
        for (size_t i = 0; i < n_labels; i++)
                if (profile_builder__label(builder, &labels[i],
                                           &builder->labels[builder->n_labels + i]) < 0)
                        return -ENOMEM;
        builder->n_labels += n_labels;
        return 0;
}

static void profile_builder__append_values(struct profile_builder *builder, const int64_t *values)
{
        int64_t *out = &builder->values[builder->n_values];

        if (values)
                memcpy(out, values, builder->n_sample_types * sizeof(*values));
        else
                memset(out, 0, builder->n_sample_types * sizeof(*out));
        builder->n_values += builder->n_sample_types;
}

/* NULL values with sample types present count as all zeros. */
int profile_builder__add_sample(struct profile_builder *builder, const uint64_t *location_ids,
                                size_t n_locations, const int64_t *values,
                                const struct pb_label *labels, size_t n_labels)
{
        struct pb_sample_entry *sample;

        if (!location_ids)
                n_locations = 0;
        if (!labels)
                n_labels = 0;
        n_locations = n_locations < PB_MAX_LOCATIONS ? n_locations : PB_MAX_LOCATIONS;
        n_labels = n_labels < PB_MAX_LABELS ? n_labels : PB_MAX_LABELS;
        if (profile_builder__reserve_sample(builder, n_locations, n_labels) < 0)
                return -ENOMEM;
        sample = &builder->samples[builder->n_samples];
        sample->first_label = builder->n_labels;
        sample->n_labels = n_labels;
        if (profile_builder__append_labels(builder, labels, n_labels) < 0)
                return -ENOMEM;
        sample->first_location = builder->n_sample_locations;
        sample->n_locations = profile_builder__append_locations(builder, location_ids, n_locations);
        profile_builder__append_values(builder, values);
        builder->n_samples++;
        return 0;
}

void profile_builder__set_duration(struct profile_builder *builder, int64_t duration_nanos)
{
        builder->duration_nanos = duration_nanos;
}

size_t profile_builder__sample_count(const struct profile_builder *builder)
{
        return builder->n_samples;
}

int64_t profile_builder__frame_count(const struct profile_builder *builder)
{
        int64_t frames = 0;

        /* Ids were checked when the sample was added: 1..n_locations. */
        for (size_t i = 0; i < builder->n_sample_locations; i++)
                frames += (int64_t)builder->locations[builder->sample_locations[i] - 1].n_lines;
        return frames;
}
