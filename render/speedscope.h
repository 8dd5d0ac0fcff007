/* speedscope.h — the profile in speedscope's own file format
 * (https://www.speedscope.app/file-format-schema.json): shared frames, and
 * one "sampled" profile per thread, so speedscope's thread picker works. */
#pragma once

struct profile_builder;

/* Writes the builder's samples to `path` atomically.  0 or -errno. */
int speedscope__write(const struct profile_builder *builder, const char *path);
