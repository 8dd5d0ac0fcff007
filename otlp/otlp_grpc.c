/* otlp_grpc.c — see otlp_grpc.h.
 *
 * One channel for the whole run (grpc reconnects it by itself, with its
 * own backoff) and one pluck completion queue used by the exporter thread
 * only.  A call is the classic six-op batch: send metadata + message +
 * half-close, receive metadata + message + status.  grpc's own retries are
 * off: the exporter retries, so that a batch is resent only when the
 * status says the collector did not take it.
 *
 * TLS (https://): the CA bundle from OTEL_EXPORTER_OTLP[_LOGS]_CERTIFICATE,
 * else the system bundle (/etc/ssl/certs/ca-certificates.crt), else
 * grpc's default roots. */
#include "otlp/otlp_grpc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>
#pragma GCC diagnostic pop

#include "otlp/export_config.h"
#include "proto/otlp_logs_service.pb-c.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/log.h"

#define EXPORT_METHOD     "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
#define SYSTEM_CA_BUNDLE  "/etc/ssl/certs/ca-certificates.crt"
#define CA_MAX_BYTES      (4 * 1024 * 1024)
#define POLL_INTERVAL_MS  100
#define MAX_RESPONSE_SIZE (64 * 1024)

struct otlp_grpc {
        grpc_channel *channel;
        grpc_completion_queue *queue;
        size_t n_metadata;
        grpc_metadata metadata[EXPORT_MAX_HEADERS];
};

/* grpc's own lines (handshake failures, reconnects; GRPC_VERBOSITY and
 * GRPC_TRACE add more) go through util/log.h, so that they obey the
 * daemon's rate limit and -v, and look like ours.  grpc's ERROR becomes a
 * warning: our errors are never rate-limited, and a transport error is
 * already reported by the exporter (with its own pacing). */
static void otlp_grpc__log(gpr_log_func_args *args)
{
        const char *file = args->file ? strrchr(args->file, '/') : NULL;
        enum log_level level = LOG_LEVEL_DEBUG;

        if (args->severity == GPR_LOG_SEVERITY_ERROR)
                level = LOG_LEVEL_WARNING;
        else if (args->severity == GPR_LOG_SEVERITY_INFO)
                level = LOG_LEVEL_INFO;
        log_message(level, "grpc: %s (%s:%d)", args->message ?: "",
                    file ? file + 1 : (args->file ?: "?"), args->line);
}

static char *read_pem(const char *path)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *pem = NULL;
        size_t n;

        if (!f)
                return NULL;
        pem = malloc(CA_MAX_BYTES + 1);
        if (!pem)
                return NULL;
        n = fread(pem, 1, CA_MAX_BYTES, f);
        if (ferror(f))
                return NULL;
        pem[n] = '\0';
        return take_ptr(pem);
}

static grpc_channel_credentials *credentials_new(const struct export_config *config, char *error,
                                                 size_t error_size)
{
        _cleanup_free_ char *pem = NULL;
        grpc_channel_credentials *creds;

        if (!config->tls)
                return grpc_insecure_credentials_create();
        if (config->ca_file[0]) {
                pem = read_pem(config->ca_file);
                if (!pem) {
                        snprintf(error, error_size, "cannot read the CA file %s: %s",
                                 config->ca_file, strerror(errno));
                        return NULL;
                }
        } else {
                pem = read_pem(SYSTEM_CA_BUNDLE); /* NULL: grpc's defaults */
        }
        creds = grpc_ssl_credentials_create(pem, NULL, NULL, NULL);
        if (!creds)
                snprintf(error, error_size, "cannot create TLS credentials");
        return creds;
}

static void metadata_init(struct otlp_grpc *client, const struct export_config *config)
{
        for (size_t i = 0; i < config->n_headers; i++) {
                client->metadata[i].key = grpc_slice_from_copied_string(config->headers[i].key);
                client->metadata[i].value = grpc_slice_from_copied_string(config->headers[i].value);
        }
        client->n_metadata = config->n_headers;
}

#define RECONNECT_BACKOFF_MIN_MS 250
#define RECONNECT_BACKOFF_MAX_MS 2000
#define CONNECT_TIMEOUT_MIN_MS   1000

/* How long one connection attempt may take: the export timeout, so that
 * whatever a call could wait for is given to the handshake too. */
static int connect_timeout_ms(const struct export_config *config)
{
        int64_t ms = config->timeout_ms;

        if (ms < CONNECT_TIMEOUT_MIN_MS)
                return CONNECT_TIMEOUT_MIN_MS;
        return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

struct otlp_grpc *otlp_grpc__new(const struct export_config *config, char *error, size_t error_size)
{
        struct otlp_grpc *client = calloc(1, sizeof(*client));
        grpc_arg args[] = {
            {.type = GRPC_ARG_INTEGER, .key = (char *)GRPC_ARG_ENABLE_RETRIES, .value.integer = 0},
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
             .value.integer = MAX_RESPONSE_SIZE},
            /* The exporter owns retry pacing (at most BACKOFF_MAX_MS between
             * tries); without these the channel's own reconnect backoff
             * grows to two minutes while a collector is down, and data
             * waits long after the collector is back. */
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
             .value.integer = RECONNECT_BACKOFF_MIN_MS},
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
             .value.integer = RECONNECT_BACKOFF_MAX_MS},
            /* Despite its name, grpc uses this one only as the minimum
             * time a connection attempt (TCP, TLS and HTTP/2 handshake,
             * up to the server's SETTINGS) may take: the attempt's
             * deadline is max(next backoff, now + this).  Set to the
             * backoff (250 ms), every attempt to a collector that needs
             * longer was abandoned and nothing was ever sent.  The
             * export timeout is the longest a call may wait anyway. */
            {.type = GRPC_ARG_INTEGER,
             .key = (char *)GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
             .value.integer = connect_timeout_ms(config)},
        };
        grpc_channel_args channel_args = {.num_args = ARRAY_SIZE(args), .args = args};
        grpc_channel_credentials *creds;

        if (!client) {
                snprintf(error, error_size, "out of memory");
                return NULL;
        }
        gpr_set_log_function(otlp_grpc__log); /* before grpc_init: it logs too */
        grpc_init();
        creds = credentials_new(config, error, error_size);
        if (!creds) {
                free(client);
                grpc_shutdown_blocking();
                return NULL;
        }
        client->channel = grpc_channel_create(config->target, creds, &channel_args);
        grpc_channel_credentials_release(creds);
        client->queue = grpc_completion_queue_create_for_pluck(NULL);
        metadata_init(client, config);
        return client;
}

void otlp_grpc__free(struct otlp_grpc *client)
{
        if (!client)
                return;
        for (size_t i = 0; i < client->n_metadata; i++) {
                grpc_slice_unref(client->metadata[i].key);
                grpc_slice_unref(client->metadata[i].value);
        }
        grpc_channel_destroy(client->channel);
        grpc_completion_queue_shutdown(client->queue);
        while (grpc_completion_queue_pluck(client->queue, NULL, gpr_inf_future(GPR_CLOCK_REALTIME),
                                           NULL)
                   .type != GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(client->queue);
        free(client);
        grpc_shutdown_blocking();
}

int otlp_status__retryable(int status)
{
        switch (status) {
        case OTLP_CANCELLED:
        case OTLP_DEADLINE_EXCEEDED:
        case OTLP_RESOURCE_EXHAUSTED:
        case OTLP_ABORTED:
        case OTLP_OUT_OF_RANGE:
        case OTLP_UNAVAILABLE:
        case OTLP_DATA_LOSS:
                return 1;
        default:
                return 0;
        }
}

/* Waits for the batch; cancels the call once *abort_at_ns has passed. */
static void wait_for_call(struct otlp_grpc *client, grpc_call *call, void *tag,
                          const uint64_t *abort_at_ns)
{
        bool cancelled = false;

        for (;;) {
                gpr_timespec until =
                    gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                 gpr_time_from_millis(POLL_INTERVAL_MS, GPR_TIMESPAN));
                grpc_event event = grpc_completion_queue_pluck(client->queue, tag, until, NULL);
                uint64_t abort_at =
                    abort_at_ns ? __atomic_load_n(abort_at_ns, __ATOMIC_ACQUIRE) : 0;

                if (event.type == GRPC_OP_COMPLETE)
                        return;
                if (!cancelled && abort_at && monotonic_ns() >= abort_at) {
                        grpc_call_cancel(call, NULL);
                        cancelled = true;
                }
        }
}

static void read_response(grpc_byte_buffer *response, struct otlp_result *result)
{
        grpc_byte_buffer_reader reader;
        Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceResponse *decoded;
        grpc_slice all;

        if (!response || !grpc_byte_buffer_reader_init(&reader, response))
                return;
        all = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        decoded = opentelemetry__proto__collector__logs__v1__export_logs_service_response__unpack(
            NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
        grpc_slice_unref(all);
        if (!decoded)
                return;
        if (decoded->partial_success) {
                result->rejected_log_records = decoded->partial_success->rejected_log_records;
                snprintf(result->partial_message, sizeof(result->partial_message), "%s",
                         decoded->partial_success->error_message
                             ? decoded->partial_success->error_message
                             : "");
        }
        opentelemetry__proto__collector__logs__v1__export_logs_service_response__free_unpacked(
            decoded, NULL);
}

void otlp_grpc__export(struct otlp_grpc *client, const uint8_t *request, size_t len,
                       int64_t timeout_ms, const uint64_t *abort_at_ns, struct otlp_result *result)
{
        gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                             gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
        grpc_slice method = grpc_slice_from_static_string(EXPORT_METHOD);
        grpc_slice payload = grpc_slice_from_copied_buffer((const char *)request, len);
        grpc_byte_buffer *message = grpc_raw_byte_buffer_create(&payload, 1);
        grpc_byte_buffer *response = NULL;
        grpc_metadata_array initial, trailing;
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = grpc_empty_slice();
        grpc_op ops[6];
        grpc_call *call;
        void *tag = &ops;

        *result = (struct otlp_result){.status = OTLP_UNKNOWN};
        grpc_slice_unref(payload);
        grpc_metadata_array_init(&initial);
        grpc_metadata_array_init(&trailing);
        memset(ops, 0, sizeof(ops));
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[0].data.send_initial_metadata.count = client->n_metadata;
        ops[0].data.send_initial_metadata.metadata = client->metadata;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = message;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &response;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
        ops[5].data.recv_status_on_client.status = &status;
        ops[5].data.recv_status_on_client.status_details = &details;
        call = grpc_channel_create_call(client->channel, NULL, GRPC_PROPAGATE_DEFAULTS,
                                        client->queue, method, NULL, deadline, NULL);
        if (grpc_call_start_batch(call, ops, 6, tag, NULL) == GRPC_CALL_OK) {
                wait_for_call(client, call, tag, abort_at_ns);
                result->status = (int)status;
                snprintf(result->message, sizeof(result->message), "%.*s",
                         (int)GRPC_SLICE_LENGTH(details),
                         (const char *)GRPC_SLICE_START_PTR(details));
                if (status == GRPC_STATUS_OK)
                        read_response(response, result);
        } else {
                snprintf(result->message, sizeof(result->message), "cannot start the call");
        }
        grpc_call_unref(call);
        grpc_byte_buffer_destroy(message);
        if (response)
                grpc_byte_buffer_destroy(response);
        grpc_slice_unref(details);
        grpc_metadata_array_destroy(&initial);
        grpc_metadata_array_destroy(&trailing);
}
