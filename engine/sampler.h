/* sampler.h — one sampling tick over every live target. */
#pragma once

#include "engine/registry.h"

/* The ptrace_event_handlers.on_interrupt_stop of the tracer's table
 * (`arg` is the registry): captures the thread in its stop, only while a
 * tick is taking stops. */
void sampler__on_interrupt_stop(void *arg, struct target *target, struct tthread *thread);

/* The ptrace_event_handlers.on_resumed of that table: reads the resumed
 * thread's schedstat, which tells whether it waited for a CPU before its
 * stop arrived. */
void sampler__on_resumed(void *arg, struct target *target, struct tthread *thread);

/* Interrupts the running threads, waits for their stops, samples the
 * blocked ones without stopping them, then unwinds and records. */
void sampler__tick(struct registry *registry, uint64_t tick_realtime_ns);
