/* frame_label.h — the one-line name a frame gets in collapsed stacks and in
 * the SVG flame graph: native frames by function name, Python frames as
 * "function (file:line)" like py-spy, so that collapsed files from both
 * tools look alike.  ';' (the collapsed separator) and control characters
 * are replaced, so a hostile symbol name cannot forge extra frames or
 * lines. */
#pragma once

#include <stddef.h>

struct ps_frame;

/* Writes the label into `out` (always NUL-terminated, cut to size). */
void frame_label__format(const struct ps_frame *frame, char *out, size_t size);
