/* cmd_dump.h — `splunk-profd dump`: every thread's current stack, once.
 *
 * The tracer runs one tick (config.max_ticks = 1) through the same sampler
 * as a recording, and a few more only while a thread is still without a
 * sample (the sink's `complete`); this module is the sample sink.  It
 * copies what it needs on the tracer thread, and prints on the main thread
 * after the tracer has exited and every thread has been released. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "engine/sample_sink.h"

struct cmd_dump;

struct cmd_dump *cmd_dump__new(bool json);
void cmd_dump__free(struct cmd_dump *dump);
static inline void cmd_dump__freep(struct cmd_dump **dump)
{
        cmd_dump__free(*dump);
}

/* The sink to install in the registry before the tracer starts. */
struct sample_sink cmd_dump__sink(struct cmd_dump *dump);

/* Prints the dump as text or JSON; returns the exit status (0, or 1 when
 * nothing could be sampled or written). */
int cmd_dump__print(struct cmd_dump *dump, FILE *out);
