/* collapsed.h — the profile as collapsed stacks ("folded" format), one
 * line per distinct stack: "root;caller;...;leaf COUNT", as flamegraph.pl,
 * inferno and speedscope read it. */
#pragma once

#include <stdbool.h>

struct profile_builder;

/* Writes the builder's samples to `path` atomically; `threads`: each
 * stack starts with a "NAME (TID)" frame for its thread, as py-spy's
 * --threads.  0 or -errno. */
int collapsed__write(const struct profile_builder *builder, const char *path, bool threads);
