/* splunk_profd_context.h — publish the current thread's span to
 * splunk-profd, for native (C, C++, Rust via FFI) applications.
 *
 * Call splunk_profd_context_set() when a thread starts running inside a
 * span and splunk_profd_context_clear() when it leaves it; splunk-profd
 * then labels that thread's samples with trace_id and span_id.  Each call
 * writes only the calling thread's slot of a small shared segment (see
 * context/FORMAT.md): no locks, no allocation, no syscall after the
 * thread's first call.  Fork-safe: a child gets its own segment.
 *
 * It also publishes the OpenTelemetry standards for out-of-process
 * readers: OTEP 4947 (the exported TLS variable otel_thread_ctx_v1 points
 * to the thread's record while it is in a span) and OTEP 4719 (an OTEL_CTX
 * process context with service.name from OTEL_SERVICE_NAME), so any
 * standard reader labels the app too.
 *
 * pkg-config --cflags --libs splunk-profd-context */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the segment with room for `slots` threads (0: the default,
 * 1024) and publishes the process context.  Optional: the first set/mark
 * call does it.  Returns 0 or -errno; a second call is a no-op returning
 * 0. */
int splunk_profd_context_init(unsigned slots);

/* The calling thread now runs inside this span.  All-zero ids clear it.
 * Returns 0, or -errno when no slot could be had (the span is then simply
 * not published). */
int splunk_profd_context_set(const uint8_t trace_id[16], const uint8_t span_id[8],
                             uint8_t trace_flags);

/* The calling thread runs outside any span. */
int splunk_profd_context_clear(void);

/* Marks the calling thread as the telemetry SDK's own (exporter, batch
 * processor): splunk-profd leaves its samples out unless
 * SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS=true. */
int splunk_profd_context_mark_internal(int internal);

/* Frees the calling thread's slot now (it is also freed at thread exit). */
void splunk_profd_context_release_thread(void);

#ifdef __cplusplus
}
#endif
