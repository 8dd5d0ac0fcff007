/* profile_builder.h — accumulates samples into a pprof Profile
 * (perftools.profiles, our own proto/profile.proto) and serializes it.
 *
 * Owns the string table (index 0 is always ""), and deduplicates mappings,
 * functions and locations, so callers hand in plain strings and get ids
 * back.  All ids are 1-based; 0 never appears.  Input strings are copied.
 *
 *   mapping  deduplicated by (start, limit, offset, filename, build_id)
 *   function deduplicated by (name, system_name, filename)
 *   location deduplicated by (mapping_id, address, every line); a Python
 *            frame passes mapping_id 0 and address 0, so it gets one
 *            Location per (file, function, line) as Splunk's SDKs do. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cleanup.h"

struct profile_builder;

struct pb_mapping {
        uint64_t start, limit, offset;
        const char *filename; /* NULL or "" when unknown */
        const char *build_id; /* NULL or "" when unknown */
        bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

/* One Line of a Location; for inlined code the innermost comes first. */
struct pb_line {
        const char *function;    /* Function.name */
        const char *system_name; /* Function.system_name; NULL = same as name */
        const char *filename;    /* Function.filename, NULL or "" = unknown */
        int64_t line;            /* Line.line; Splunk uses -1 for unknown */
};

/* A sample label: exactly one of str / num, as pprof requires. */
struct pb_label {
        const char *key;
        const char *str;      /* non-NULL: a string label */
        int64_t num;          /* used when str == NULL */
        const char *num_unit; /* optional, numeric labels only */
};

struct profile_builder_options {
        /* sample_type entries; n_sample_types == 0 gives a Splunk-style
         * profile with no sample_type and no values. */
        size_t n_sample_types;
        const char *sample_type[4]; /* e.g. "samples" */
        const char *sample_unit[4]; /* e.g. "count" */
        const char *period_type;    /* NULL: no period_type */
        const char *period_unit;
        int64_t period;
        int64_t time_nanos;
        /* Index into sample_type of the one viewers show by default
         * (pprof default_sample_type; render/ reads the same one); 0 (the
         * first) when unset.  Must be < n_sample_types when there are any. */
        size_t default_sample_type;
};

/* NULL options: no sample types, no period (Splunk style).  NULL with
 * errno EINVAL when n_sample_types > 4, ENOMEM when out of memory. */
struct profile_builder *profile_builder__new(const struct profile_builder_options *options);
void profile_builder__free(struct profile_builder *builder);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct profile_builder *, profile_builder__free, profile_builder__freep)

/* Both return 0 on failure (out of memory; for a location also an unknown
 * mapping_id).  Lines beyond the first 64 are dropped. */
uint64_t profile_builder__mapping(struct profile_builder *builder,
                                  const struct pb_mapping *mapping);

uint64_t profile_builder__location(struct profile_builder *builder, uint64_t mapping_id,
                                   uint64_t address, const struct pb_line *lines, size_t n_lines);

/* location_ids leaf first; values has n_sample_types entries (may be NULL
 * when there are none).  Returns 0 or -ENOMEM.  Ids 0 or unknown are
 * skipped; at most 4096 locations (leaf side) and 64 labels are kept. */
int profile_builder__add_sample(struct profile_builder *builder, const uint64_t *location_ids,
                                size_t n_locations, const int64_t *values,
                                const struct pb_label *labels, size_t n_labels);

void profile_builder__set_duration(struct profile_builder *builder, int64_t duration_nanos);
size_t profile_builder__sample_count(const struct profile_builder *builder);
/* Frames over all samples: every Line of every Location of every sample,
 * so an inlined function counts as a frame of its own. */
int64_t profile_builder__frame_count(const struct profile_builder *builder);

/* Serialized, uncompressed Profile in a malloc'd buffer.  0 or -errno. */
int profile_builder__encode(struct profile_builder *builder, uint8_t **out, size_t *out_len);
