/* cmd_top.h — `splunk-profd top`: a live view of the hottest functions.
 *
 * The tracer samples exactly as for a recording; the top sink
 * (cli/top_table.h) folds each sample into per-function counts, and the
 * main thread redraws the view once a second and reads keys (cli/tui.h). */
#pragma once

#include "engine/registry.h"

/* Runs until q, Ctrl-C, SIGINT/SIGTERM/SIGHUP or the targets' exit.
 * Returns the exit status (0; 1 runtime failure; 2 not a terminal; 3 a
 * target cannot be profiled). */
int cmd_top__run(struct registry *registry, int signal_fd);
