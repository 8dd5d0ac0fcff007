/* sampler.h — one sampling tick over every live target. */
#pragma once

#include "engine/registry.h"

/* The ptrace event callbacks the sampler needs (capture on our stops). */
extern const struct ptrace_event_handlers sampler_event_handlers;

/* Interrupts the running threads, waits for their stops, samples the
 * blocked ones without stopping them, then unwinds and records. */
void sampler__tick(struct registry *registry, uint64_t tick_realtime_ns);

/* Sets up symbolization and unwinding for a freshly attached target. */
int sampler__prepare_target(struct registry *registry, struct target *target);
void sampler__release_target(struct target *target);

/* Waits up to `timeout_ns` for SIGCHLD and, if one came, handles all
 * ptrace events (without one, none happened since the last drain). */
void sampler__handle_events(struct registry *registry, uint64_t timeout_ns);
/* Handles all ptrace events, SIGCHLD or not: the exit path, and the loop's
 * idle wake-ups, as a safety net. */
void sampler__drain_events(struct registry *registry);
