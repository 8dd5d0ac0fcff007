/* profile_builder_internal.h — the builder's tables, shared between
 * profile_builder.c (which fills them) and profile_encode.c (which turns
 * them into a protobuf-c Profile).  Not for other modules. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/index_map.h"
#include "pprof/profile_builder.h"
#include "pprof/string_table.h"

/* Caps on caller input; what lies beyond is dropped (see
 * profile_builder.c for which end). */
#define PB_MAX_SAMPLE_TYPES 4
#define PB_MAX_LINES        64
#define PB_MAX_LOCATIONS    4096
#define PB_MAX_LABELS       64

/* All string fields below are string-table indices. */
struct pb_value_type {
        int64_t type, unit;
};

struct pb_mapping_entry {
        uint64_t start, limit, offset;
        int64_t filename, build_id;
        bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pb_function_entry {
        int64_t name, system_name, filename;
};

struct pb_line_entry {
        uint64_t function_id;
        int64_t line;
};

struct pb_location_entry {
        uint64_t mapping_id, address;
        size_t first_line; /* into builder->lines */
        size_t n_lines;
};

struct pb_label_entry {
        int64_t key, str, num, num_unit;
};

struct pb_sample_entry {
        size_t first_location; /* into builder->sample_locations */
        size_t n_locations;
        size_t first_label; /* into builder->labels */
        size_t n_labels;
        /* values: builder->values[index * n_sample_types ...] */
};

struct profile_builder {
        struct string_table strings;

        size_t n_sample_types;
        struct pb_value_type sample_types[PB_MAX_SAMPLE_TYPES];
        size_t default_sample_type; /* index into sample_types */
        bool has_period_type;
        struct pb_value_type period_type;
        int64_t period, time_nanos, duration_nanos;

        struct pb_mapping_entry *mappings;
        size_t n_mappings, mappings_capacity;
        struct index_map mapping_map;

        struct pb_function_entry *functions;
        size_t n_functions, functions_capacity;
        struct index_map function_map;

        struct pb_location_entry *locations;
        size_t n_locations, locations_capacity;
        struct index_map location_map;
        struct pb_line_entry *lines;
        size_t n_lines, lines_capacity;

        struct pb_sample_entry *samples;
        size_t n_samples, samples_capacity;
        uint64_t *sample_locations;
        size_t n_sample_locations, sample_locations_capacity;
        int64_t *values;
        size_t n_values, values_capacity;
        struct pb_label_entry *labels;
        size_t n_labels, labels_capacity;
};
