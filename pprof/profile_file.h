/* profile_file.h — writes a finished profile to disk, atomically: a temp
 * file in the same directory, fsync, rename.  A reader never sees half a
 * file, and a failed write leaves any older file in place.  Devices,
 * FIFOs and "-" are written through instead, symlinks followed
 * (pprof/output_target.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct profile_builder;

/* Encodes, gzips and writes the profile to `path`.  0 or -errno. */
int profile_file__write_pprof(struct profile_builder *builder, const char *path);

/* Writes raw bytes to `path` as above.  0 or -errno. */
int profile_file__write_bytes(const char *path, const uint8_t *data, size_t len);
