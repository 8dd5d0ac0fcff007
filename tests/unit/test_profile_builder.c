/* test_profile_builder.c — unit tests for pprof/: deduplication in the
 * profile builder (through its tables, profile_builder_internal.h), gzip
 * round trips through zlib's inflate, and the atomic file writer.
 *
 * The encoded profiles are not read back here: code generated from our
 * own proto/profile.proto would agree with the encoder even about a wrong
 * field number.  Given a directory, the test writes each profile there
 * (NAME.pb.gz) and tests/unit/pprof_readback.py reads them with
 * tests/pprofcheck (github.com/google/pprof/profile). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/gzip.h"
#include "pprof/profile_builder.h"
#include "pprof/profile_builder_internal.h"
#include "pprof/profile_file.h"
#include "util/cleanup.h"
#include "tests/unit/check.h"

#define _cleanup_builder_ _cleanup_(profile_builder__freep)

/* Where profiles are written for pprof_readback.py; NULL: nowhere. */
static const char *out_dir;

/* Encodes `builder` (which must succeed) and, with an output directory
 * and a `name`, writes it as NAME.pb.gz. */
static void emit(struct profile_builder *builder, const char *name)
{
        _cleanup_free_ uint8_t *data = NULL;
        char path[4096];
        size_t len = 0;

        CHECK(profile_builder__encode(builder, &data, &len) == 0 && len > 0);
        if (!out_dir || !name)
                return;
        snprintf(path, sizeof(path), "%s/%s.pb.gz", out_dir, name);
        CHECK(profile_file__write_pprof(builder, path) == 0);
}

static const char *string_at(const struct profile_builder *b, int64_t index)
{
        CHECK(index >= 0 && (size_t)index < b->strings.count);
        return b->strings.strings[index];
}

static struct profile_builder *new_cpu_builder(void)
{
        struct profile_builder_options options = {
            .n_sample_types = 2,
            .sample_type = {"samples", "cpu"},
            .sample_unit = {"count", "nanoseconds"},
            .period_type = "cpu",
            .period_unit = "nanoseconds",
            .period = 10000000,
            .time_nanos = 1700000000000000000,
            .default_sample_type = 1, /* cpu: read back as its type's name */
        };
        struct profile_builder *builder = profile_builder__new(&options);

        CHECK(builder);
        return builder;
}

static void test_dedup(void)
{
        _cleanup_builder_ struct profile_builder *b = new_cpu_builder();
        /* Flags T,F,T,F here and T,T,F,F on the second mapping: any two
         * has_* fields swapped on the wire show in pprof_readback.py. */
        struct pb_mapping m = {0x400000, 0x500000, 0x1000, "/usr/bin/app", "abcd",
                               true,     false,    true,   false};
        struct pb_line inlined[2] = {{"inner", "_Z5innerv", "a.c", 10}, {"outer", NULL, "a.c", 20}};
        struct pb_line outer = {"outer", NULL, "a.c", 25};
        struct pb_line py1 = {"handle", NULL, "app.py", -1};
        struct pb_line py2 = {"handle", NULL, "app.py", 7};
        uint64_t m1 = profile_builder__mapping(b, &m), m2 = profile_builder__mapping(b, &m);
        uint64_t l1 = profile_builder__location(b, m1, 0x401000, inlined, 2);
        uint64_t l2 = profile_builder__location(b, m1, 0x401000, inlined, 2);
        uint64_t l3 = profile_builder__location(b, m1, 0x402000, &outer, 1);
        uint64_t p1 = profile_builder__location(b, 0, 0, &py1, 1);
        uint64_t p2 = profile_builder__location(b, 0, 0, &py1, 1);
        uint64_t p3 = profile_builder__location(b, 0, 0, &py2, 1);

        CHECK(m1 == 1 && m2 == 1);
        CHECK(l1 != 0 && l1 == l2 && l3 != 0 && l3 != l1);
        CHECK(p1 != 0 && p1 == p2 && p3 != 0 && p3 != p1);
        CHECK(profile_builder__location(b, 7, 0x1, &outer, 1) == 0); /* unknown mapping */
        m = (struct pb_mapping){0x600000, 0x680000, 0,    "/usr/lib/libx.so", NULL, true,
                                true,     false,    false};
        CHECK(profile_builder__mapping(b, &m) == 2);

        CHECK(b->n_mappings == 2 && b->n_locations == 4);
        CHECK(b->n_functions == 3); /* inner, outer, handle */
        CHECK(b->locations[1].n_lines == 1 &&
              b->lines[b->locations[1].first_line].function_id ==
                  b->lines[b->locations[0].first_line + 1].function_id);
        CHECK(strcmp(string_at(b, b->mappings[1].build_id), "") == 0);

        /* pprof_readback.py: leaf first, inner (10) outer (20) at 0x401000,
         * outer (25) at 0x402000, then handle (app.py:7) with no mapping. */
        uint64_t stack[3] = {l1, l3, p3};
        int64_t values[2] = {3, 30000000};
        CHECK(profile_builder__add_sample(b, stack, 3, values, NULL, 0) == 0);
        /* Frames, not locations: the inlined location is two. */
        CHECK(profile_builder__frame_count(b) == 4);
        emit(b, "dedup");
}

static void test_encoding(void)
{
        _cleanup_builder_ struct profile_builder *b = new_cpu_builder();
        struct pb_line line = {NULL, NULL, NULL, 3};
        uint64_t loc = profile_builder__location(b, 0, 0, &line, 1);
        uint64_t stack[3] = {loc, 0, 999};
        int64_t values[2] = {1, 10000000};
        struct pb_label labels[2] = {{"thread.id", NULL, 42, "id"},
                                     {"thread.name", "main", 0, "x"}};

        CHECK(loc != 0);
        CHECK(profile_builder__add_sample(b, stack, 3, values, labels, 2) == 0);
        CHECK(profile_builder__add_sample(b, stack, 1, NULL, NULL, 0) == 0);
        profile_builder__set_duration(b, 5000000000);
        CHECK(profile_builder__sample_count(b) == 2);

        CHECK(b->strings.count > 0 && strcmp(b->strings.strings[0], "") == 0);
        CHECK(b->n_sample_types == 2 &&
              strcmp(string_at(b, b->sample_types[1].unit), "nanoseconds") == 0);
        CHECK(b->has_period_type && b->period == 10000000 && b->duration_nanos == 5000000000);
        CHECK(b->n_samples == 2);
        CHECK(b->samples[0].n_locations == 1 &&
              b->sample_locations[b->samples[0].first_location] == loc);
        CHECK(b->values[1] == 10000000 && b->values[2] == 0 && b->values[3] == 0);
        CHECK(b->samples[0].n_labels == 2);
        const struct pb_label_entry *label = &b->labels[b->samples[0].first_label];
        CHECK(label[0].str == 0 && label[0].num == 42);
        CHECK(strcmp(string_at(b, label[0].num_unit), "id") == 0);
        CHECK(strcmp(string_at(b, label[1].str), "main") == 0);
        CHECK(label[1].num == 0 && label[1].num_unit == 0);
        CHECK(b->n_functions == 1 && b->functions[0].name == 0);
        emit(b, "encoding");
}

static void test_splunk_style(void)
{
        struct profile_builder_options options = {.time_nanos = 1};
        _cleanup_builder_ struct profile_builder *b = profile_builder__new(&options);
        struct pb_line line = {"f", NULL, "f.py", -1};
        uint64_t loc = profile_builder__location(b, 0, 0, &line, 1);

        CHECK(profile_builder__add_sample(b, &loc, 1, NULL, NULL, 0) == 0);
        CHECK(b->n_sample_types == 0 && !b->has_period_type);
        CHECK(b->n_samples == 1 && b->n_values == 0);
        CHECK(b->lines[b->locations[0].first_line].line == -1);
        emit(b, "splunk");

        struct profile_builder_options too_many = {.n_sample_types = 5};
        CHECK(profile_builder__new(&too_many) == NULL && errno == EINVAL);
}

static void test_bounds(void)
{
        _cleanup_builder_ struct profile_builder *b = new_cpu_builder();
        struct pb_line lines[100];
        static uint64_t stack[5000];
        char names[100][16];

        for (int i = 0; i < 100; i++) {
                snprintf(names[i], sizeof(names[i]), "f%d", i);
                lines[i] = (struct pb_line){names[i], NULL, "x.c", i};
        }
        uint64_t loc = profile_builder__location(b, 0, 0x10, lines, 100);
        CHECK(loc != 0);
        for (size_t i = 0; i < 5000; i++)
                stack[i] = loc;
        CHECK(profile_builder__add_sample(b, stack, 5000, NULL, NULL, 0) == 0);

        CHECK(b->locations[0].n_lines == 64);
        CHECK(
            strcmp(string_at(
                       b, b->functions[b->lines[b->locations[0].first_line].function_id - 1].name),
                   "f0") == 0);
        CHECK(b->samples[0].n_locations == 4096);
        emit(b, "bounds");
}

static void test_many_samples(void)
{
        _cleanup_builder_ struct profile_builder *b = new_cpu_builder();
        char name[32];
        uint64_t ids[3000], stack[32];
        int64_t values[2] = {1, 10};

        for (int i = 0; i < 3000; i++) {
                snprintf(name, sizeof(name), "function_%d", i);
                struct pb_line line = {name, NULL, "big.c", i};
                ids[i] = profile_builder__location(b, 0, 0, &line, 1);
                CHECK(ids[i] == (uint64_t)i + 1);
        }
        for (int s = 0; s < 100000; s++) {
                for (int f = 0; f < 32; f++)
                        stack[f] = ids[(s * 7 + f * 13) % 3000];
                struct pb_label label = {"thread.id", NULL, s % 17, NULL};
                CHECK(profile_builder__add_sample(b, stack, 32, values, &label, 1) == 0);
        }
        CHECK(b->n_samples == 100000 && b->n_locations == 3000 && b->n_functions == 3000);
        CHECK(b->samples[99999].n_locations == 32 &&
              b->labels[b->samples[99999].first_label].num == 99999 % 17);
        /* Too big for a JSON read-back (3.2 million frames): encoded only. */
        emit(b, NULL);
}

static void inflatep(z_stream *stream)
{
        inflateEnd(stream);
}

static void gunzip_check(const uint8_t *gz, size_t gz_len, const uint8_t *expect, size_t len)
{
        _cleanup_(inflatep) z_stream stream = {0};
        _cleanup_free_ uint8_t *out = malloc(len + 16);

        CHECK(out && gz_len >= 18 && gz[0] == 0x1f && gz[1] == 0x8b);
        CHECK(inflateInit2(&stream, 15 + 16) == Z_OK);
        stream.next_in = (Bytef *)gz;
        stream.avail_in = (uInt)gz_len;
        stream.next_out = out;
        stream.avail_out = (uInt)(len + 16);
        CHECK(inflate(&stream, Z_FINISH) == Z_STREAM_END);
        CHECK(stream.total_out == len && memcmp(out, expect, len) == 0);
        CHECK(stream.avail_in == 0);
}

static void test_gzip(void)
{
        size_t len = 8 << 20;
        _cleanup_free_ uint8_t *data = malloc(len);
        uint32_t x = 12345;

        CHECK(data);
        for (size_t i = 0; i < len; i++) {
                x = x * 1103515245 + 12345;
                data[i] = i % 3 ? (uint8_t)(x >> 24) : (uint8_t)i;
        }
        const size_t sizes[] = {0, 1, 17, 4096, 65537, 1 << 20, len};

        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
                _cleanup_free_ uint8_t *gz = NULL;
                size_t gz_len = 0;

                CHECK(gzip__compress(sizes[i] ? data : NULL, sizes[i], &gz, &gz_len) == 0);
                gunzip_check(gz, gz_len, data, sizes[i]);
        }
        CHECK(gzip__compress(NULL, 5, &(uint8_t *){NULL}, &(size_t){0}) == -EINVAL);
}

static size_t count_entries(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        size_t n = 0;

        CHECK(d);
        while ((e = readdir(d)))
                n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
        closedir(d);
        return n;
}

static void test_file(void)
{
        char dir[] = "/tmp/test_profile_builder.XXXXXX";
        char path[128], missing[160], buf[16] = {0};
        _cleanup_builder_ struct profile_builder *b = new_cpu_builder();
        struct stat st;
        FILE *f;

        CHECK(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/cpu.pb.gz", dir);
        snprintf(missing, sizeof(missing), "%s/nodir/cpu.pb.gz", dir);
        CHECK(profile_file__write_bytes(path, (const uint8_t *)"old", 3) == 0);
        CHECK(profile_file__write_bytes(path, (const uint8_t *)"newer", 5) == 0);
        CHECK((f = fopen(path, "r")) && fread(buf, 1, sizeof(buf), f) == 5);
        fclose(f);
        CHECK(memcmp(buf, "newer", 5) == 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
        CHECK(profile_file__write_bytes(missing, (const uint8_t *)"x", 1) == -ENOENT);
        CHECK(profile_file__write_pprof(b, path) == 0);
        CHECK(stat(path, &st) == 0 && st.st_size > 18);
        CHECK(count_entries(dir) == 1); /* no temp files left */
        emit(b, "empty");
        CHECK(unlink(path) == 0 && rmdir(dir) == 0);
}

int main(int argc, char **argv)
{
        out_dir = argc > 1 ? argv[1] : NULL;
        test_dedup();
        test_encoding();
        test_splunk_style();
        test_bounds();
        test_many_samples();
        test_gzip();
        test_file();
        printf("ok\n");
        return 0;
}
