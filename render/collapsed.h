/* collapsed.h — the profile as collapsed stacks ("folded" format), one
 * line per distinct stack: "root;caller;...;leaf COUNT", as flamegraph.pl,
 * inferno and speedscope read it. */
#pragma once

struct profile_builder;

/* Writes the builder's samples to `path` atomically.  0 or -errno. */
int collapsed__write(const struct profile_builder *builder, const char *path);
