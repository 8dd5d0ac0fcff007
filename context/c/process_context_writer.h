/* process_context_writer.h — publishes this process's OpenTelemetry
 * process context (OTEP 4719, version 2) for out-of-process readers: a
 * memfd named OTEL_CTX holding the 32-byte header, followed by a protobuf
 * ProcessContext with the resource (service.name from OTEL_SERVICE_NAME)
 * and the OTEP 4947 thread-local reference data (schema version and an
 * attribute key map) that readers of otel_thread_ctx_v1 need.
 *
 * Internal to libsplunk-profd-context (hidden symbols).  Not thread-safe:
 * the caller serialises (the library's writer lock, or a fork child). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PROCESS_CONTEXT_WRITER_NAME      "OTEL_CTX"
#define PROCESS_CONTEXT_WRITER_VERSION   2u
#define PROCESS_CONTEXT_WRITER_HEADER    32u
#define PROCESS_CONTEXT_WRITER_MAP_BYTES 8192u /* header + payload: the OTEP's 2 pages */
/* OTEP 4947's schema string as the merged text and dd-trace-py have it. */
#define PROCESS_CONTEXT_WRITER_SCHEMA "tlsdesc_v1_dev"

/* Encodes the payload into `out` (at most `cap` bytes); returns its size,
 * or 0 when it does not fit.  `service_name` may be NULL (left out). */
__attribute__((visibility("hidden"))) size_t
process_context_writer__encode(uint8_t *out, size_t cap, const char *service_name);

/* Maps and publishes the context; a second call (or one in a fork child,
 * which does not inherit the mapping: MADV_DONTFORK) publishes afresh.
 * 0 or -errno. */
__attribute__((visibility("hidden"))) int process_context_writer__publish(void);
