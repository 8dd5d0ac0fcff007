/* cmd_top.h — `splunk-profd top`: a live view of the hottest functions.
 *
 * The tracer samples exactly as for a recording; the top sink
 * (cli/top_table.h) folds each sample into per-function counts, and the
 * main thread redraws the view once a second and reads keys (cli/tui.h). */
#pragma once

#include "cli/launch.h"
#include "engine/registry.h"

/* Runs until q, Ctrl-C, SIGINT/SIGTERM/SIGHUP or the targets' exit.
 * `launch`: the -- COMMAND being started (NULL: none); one whose exec
 * fails ends top with status 2 before the view opens.  Returns the exit
 * status (0; 1 runtime failure; 2 not a terminal, or COMMAND cannot run;
 * 3 a target cannot be profiled). */
int cmd_top__run(struct registry *registry, int signal_fd, struct launch *launch);
