/* flamegraph_svg.h — the profile as a self-contained, interactive SVG flame
 * graph: open it in any browser, offline.  Hover shows the frame, its
 * file:line, samples and %; a click zooms into a frame (the ancestors stay
 * as full-width bars, a click on the bottom "all" bar or "Reset zoom"
 * zooms out); the search box highlights matching frames (regular
 * expression, case-insensitive) and shows the matched %.  Python frames are
 * blue-green, native frames warm.  Everything (CSS, JS) is inline; the file
 * names no external resource, so opening it makes no network request. */
#pragma once

struct profile_builder;

/* Writes the builder's samples to `path` atomically.  0 or -errno. */
int flamegraph_svg__write(const struct profile_builder *builder, const char *path);
