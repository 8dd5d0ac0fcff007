/* otlp_grpc.h — a unary OTLP LogsService/Export client over the grpc C
 * core.  The only file that includes grpc headers (they do not build
 * cleanly under our warning flags), so the rest of the program sees plain
 * bytes and status numbers. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct export_config;
struct otlp_grpc;

/* gRPC status codes we act on (values as in grpc/status.h). */
enum otlp_status {
        OTLP_OK = 0,
        OTLP_CANCELLED = 1,
        OTLP_UNKNOWN = 2,
        OTLP_DEADLINE_EXCEEDED = 4,
        OTLP_RESOURCE_EXHAUSTED = 8,
        OTLP_ABORTED = 10,
        OTLP_OUT_OF_RANGE = 11,
        OTLP_UNAVAILABLE = 14,
        OTLP_DATA_LOSS = 15,
};

struct otlp_result {
        int status;                   /* enum otlp_status or another gRPC code */
        char message[256];            /* status details, or a local reason */
        int64_t rejected_log_records; /* partial success */
        char partial_message[256];
};

/* Initialises grpc and creates the channel (which connects lazily).
 * NULL with `error` set (e.g. an unreadable CA file). */
struct otlp_grpc *otlp_grpc__new(const struct export_config *config, char *error,
                                 size_t error_size);
/* Destroys the channel and shuts grpc down. */
void otlp_grpc__free(struct otlp_grpc *client);

/* Sends one serialized ExportLogsServiceRequest and waits for the answer,
 * at most `timeout_ms`; the call is cancelled early once the CLOCK_MONOTONIC
 * time in *abort_at_ns (read atomically; 0 = never) has passed. */
void otlp_grpc__export(struct otlp_grpc *client, const uint8_t *request, size_t len,
                       int64_t timeout_ms, const uint64_t *abort_at_ns, struct otlp_result *result);

/* Whether OTLP says to retry after this status (UNAVAILABLE, ...). */
int otlp_status__retryable(int status);
