/* profile_encode.c — turns the builder's tables into a protobuf-c
 * Perftools__Profiles__Profile and packs it.
 *
 * protobuf-c wants one message struct per mapping, function, location,
 * line, sample and label, each reached through an array of pointers.
 * Allocating those one by one would mean millions of mallocs for a large
 * profile, so each kind gets two blocks (structs and pointers) sized from
 * the builder's counts, and nested repeated fields point into slices of
 * them.  Scalars that protobuf-c can read in place (string table, location
 * ids, values) are not copied at all: they already have the layout it
 * expects.  Everything is linear in the size of the profile, and the
 * blocks live only for the duration of one encode. */
#include <errno.h>
#include <stdlib.h>

#include "pprof/profile_builder.h"
#include "pprof/profile_builder_internal.h"
#include "proto/profile.pb-c.h"
#include "util/cleanup.h"

struct encoding {
        Perftools__Profiles__ValueType sample_types[PB_MAX_SAMPLE_TYPES];
        Perftools__Profiles__ValueType *sample_type_ptrs[PB_MAX_SAMPLE_TYPES];
        Perftools__Profiles__ValueType period_type;
        Perftools__Profiles__Mapping *mappings, **mapping_ptrs;
        Perftools__Profiles__Function *functions, **function_ptrs;
        Perftools__Profiles__Location *locations, **location_ptrs;
        Perftools__Profiles__Line *lines, **line_ptrs;
        Perftools__Profiles__Sample *samples, **sample_ptrs;
        Perftools__Profiles__Label *labels, **label_ptrs;
};

static void encoding__free(struct encoding *e)
{
        free(e->mappings);
        free(e->mapping_ptrs);
        free(e->functions);
        free(e->function_ptrs);
        free(e->locations);
        free(e->location_ptrs);
        free(e->lines);
        free(e->line_ptrs);
        free(e->samples);
        free(e->sample_ptrs);
        free(e->labels);
        free(e->label_ptrs);
        free(e);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct encoding *, encoding__free, encoding__freep)

/* calloc that never returns NULL for an empty table. */
static void *encoding__array(size_t n, size_t size)
{
        return calloc(n ? n : 1, size);
}

#define ENCODING_ALLOC(structs, ptrs, n)                                                           \
        (((structs) = encoding__array((n), sizeof(*(structs)))) != NULL &&                         \
         ((ptrs) = encoding__array((n), sizeof(*(ptrs)))) != NULL)

static struct encoding *encoding__new(const struct profile_builder *b)
{
        _cleanup_(encoding__freep) struct encoding *e = calloc(1, sizeof(*e));

        if (!e)
                return NULL;
        if (!ENCODING_ALLOC(e->mappings, e->mapping_ptrs, b->n_mappings) ||
            !ENCODING_ALLOC(e->functions, e->function_ptrs, b->n_functions) ||
            !ENCODING_ALLOC(e->locations, e->location_ptrs, b->n_locations) ||
            !ENCODING_ALLOC(e->lines, e->line_ptrs, b->n_lines) ||
            !ENCODING_ALLOC(e->samples, e->sample_ptrs, b->n_samples) ||
            !ENCODING_ALLOC(e->labels, e->label_ptrs, b->n_labels))
                return NULL;
        return take_ptr(e);
}

static void encoding__value_types(struct encoding *e, const struct profile_builder *b,
                                  Perftools__Profiles__Profile *profile)
{
        for (size_t i = 0; i < b->n_sample_types; i++) {
                perftools__profiles__value_type__init(&e->sample_types[i]);
                e->sample_types[i].type = b->sample_types[i].type;
                e->sample_types[i].unit = b->sample_types[i].unit;
                e->sample_type_ptrs[i] = &e->sample_types[i];
        }
        profile->n_sample_type = b->n_sample_types;
        profile->sample_type = e->sample_type_ptrs;
        /* Only when it is not the first: a viewer defaults to that one. */
        if (b->default_sample_type > 0)
                profile->default_sample_type = b->sample_types[b->default_sample_type].type;
        if (!b->has_period_type)
                return;
        perftools__profiles__value_type__init(&e->period_type);
        e->period_type.type = b->period_type.type;
        e->period_type.unit = b->period_type.unit;
        profile->period_type = &e->period_type;
}

static void encoding__mappings(struct encoding *e, const struct profile_builder *b,
                               Perftools__Profiles__Profile *profile)
{
        for (size_t i = 0; i < b->n_mappings; i++) {
                const struct pb_mapping_entry *in = &b->mappings[i];
                Perftools__Profiles__Mapping *out = &e->mappings[i];

                perftools__profiles__mapping__init(out);
                out->id = i + 1;
                out->memory_start = in->start;
                out->memory_limit = in->limit;
                out->file_offset = in->offset;
                out->filename = in->filename;
                out->build_id = in->build_id;
                out->has_functions = in->has_functions;
                out->has_filenames = in->has_filenames;
                out->has_line_numbers = in->has_line_numbers;
                out->has_inline_frames = in->has_inline_frames;
                e->mapping_ptrs[i] = out;
        }
        profile->n_mapping = b->n_mappings;
        profile->mapping = e->mapping_ptrs;
}

static void encoding__functions(struct encoding *e, const struct profile_builder *b,
                                Perftools__Profiles__Profile *profile)
{
        for (size_t i = 0; i < b->n_functions; i++) {
                Perftools__Profiles__Function *out = &e->functions[i];

                perftools__profiles__function__init(out);
                out->id = i + 1;
                out->name = b->functions[i].name;
                out->system_name = b->functions[i].system_name;
                out->filename = b->functions[i].filename;
                e->function_ptrs[i] = out;
        }
        profile->n_function = b->n_functions;
        profile->function = e->function_ptrs;
}

static void encoding__locations(struct encoding *e, const struct profile_builder *b,
                                Perftools__Profiles__Profile *profile)
{
        for (size_t i = 0; i < b->n_lines; i++) {
                perftools__profiles__line__init(&e->lines[i]);
                e->lines[i].function_id = b->lines[i].function_id;
                e->lines[i].line = b->lines[i].line;
                e->line_ptrs[i] = &e->lines[i];
        }
        for (size_t i = 0; i < b->n_locations; i++) {
                const struct pb_location_entry *in = &b->locations[i];
                Perftools__Profiles__Location *out = &e->locations[i];

                perftools__profiles__location__init(out);
                out->id = i + 1;
                out->mapping_id = in->mapping_id;
                out->address = in->address;
                out->n_line = in->n_lines;
                out->line = &e->line_ptrs[in->first_line];
                e->location_ptrs[i] = out;
        }
        profile->n_location = b->n_locations;
        profile->location = e->location_ptrs;
}

static void encoding__labels(struct encoding *e, const struct profile_builder *b)
{
        for (size_t i = 0; i < b->n_labels; i++) {
                Perftools__Profiles__Label *out = &e->labels[i];

                perftools__profiles__label__init(out);
                out->key = b->labels[i].key;
                out->str = b->labels[i].str;
                out->num = b->labels[i].num;
                out->num_unit = b->labels[i].num_unit;
                e->label_ptrs[i] = out;
        }
}

/* location_id and value alias the builder's flat arrays: protobuf-c only
 * reads them while packing. */
static void encoding__samples(struct encoding *e, const struct profile_builder *b,
                              Perftools__Profiles__Profile *profile)
{
        encoding__labels(e, b);
        for (size_t i = 0; i < b->n_samples; i++) {
                const struct pb_sample_entry *in = &b->samples[i];
                Perftools__Profiles__Sample *out = &e->samples[i];

                perftools__profiles__sample__init(out);
                out->n_location_id = in->n_locations;
                out->location_id = &b->sample_locations[in->first_location];
                out->n_value = b->n_sample_types;
                out->value = b->n_sample_types ? &b->values[i * b->n_sample_types] : NULL;
                out->n_label = in->n_labels;
                out->label = &e->label_ptrs[in->first_label];
                e->sample_ptrs[i] = out;
        }
        profile->n_sample = b->n_samples;
        profile->sample = e->sample_ptrs;
}

static int profile_builder__pack(const Perftools__Profiles__Profile *profile, uint8_t **out,
                                 size_t *out_len)
{
        size_t size = perftools__profiles__profile__get_packed_size(profile);
        _cleanup_free_ uint8_t *buffer = malloc(size ? size : 1);

        if (!buffer)
                return -ENOMEM;
        if (perftools__profiles__profile__pack(profile, buffer) != size)
                return -EIO;
        *out = take_ptr(buffer);
        *out_len = size;
        return 0;
}

int profile_builder__encode(struct profile_builder *builder, uint8_t **out, size_t *out_len)
{
        _cleanup_(encoding__freep) struct encoding *e = NULL;
        Perftools__Profiles__Profile profile = PERFTOOLS__PROFILES__PROFILE__INIT;

        if (!builder || !out || !out_len)
                return -EINVAL;
        e = encoding__new(builder);
        if (!e)
                return -ENOMEM;
        encoding__value_types(e, builder, &profile);
        encoding__mappings(e, builder, &profile);
        encoding__functions(e, builder, &profile);
        encoding__locations(e, builder, &profile);
        encoding__samples(e, builder, &profile);
        profile.n_string_table = builder->strings.count;
        profile.string_table = builder->strings.strings;
        profile.time_nanos = builder->time_nanos;
        profile.duration_nanos = builder->duration_nanos;
        profile.period = builder->period;
        return profile_builder__pack(&profile, out, out_len);
}
