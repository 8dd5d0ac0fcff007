/* event_pump.h — where the tracer thread answers ptrace events (stops,
 * clones, forks, execs, exits, signals) between and during ticks.
 *
 * The handlers are the registry's `event_handlers` table, which the tracer
 * builds (tracer.c): the sampler's capture on its own interrupt stops, and
 * watch mode's fork and exec handling.  The pump itself knows neither. */
#pragma once

#include <stdint.h>

#include "engine/registry.h"

/* Waits up to `timeout_ns` for SIGCHLD and, if one came, handles all
 * ptrace events (without one, none happened since the last drain). */
void event_pump__wait(struct registry *registry, uint64_t timeout_ns);
/* Handles all ptrace events, SIGCHLD or not: the exit path, and the loop's
 * idle wake-ups, as a safety net. */
void event_pump__drain(struct registry *registry);
/* Handles the events already waiting, without consuming SIGCHLD (the tick
 * collecting its stops); returns how many, or -errno. */
int event_pump__collect(struct registry *registry);
/* After a poll that began at `slept_since_ns` and includes the SIGCHLD
 * descriptor: if it slept, no event waited for the tracer meanwhile. */
void event_pump__after_sleep(struct registry *registry, uint64_t slept_since_ns);
/* The tracer was idle until now with no event pending (it sleeps in poll on
 * SIGCHLD too): no event has waited for it. */
void event_pump__idle(struct registry *registry);
/* What the tracer does from now on, named in the -vv line of an answer
 * that comes late (static string). */
void event_pump__busy(struct registry *registry, const char *what);
