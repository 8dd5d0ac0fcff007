/* export_config.h — where and how profiles are exported to Splunk, after
 * the command line and the OTEL_* / SPLUNK_* environment are validated.
 *
 * Whether to export at all:
 *   --no-export                      never
 *   --endpoint URL                   yes, to URL
 *   SPLUNK_PROFILER_ENABLED=true     yes, to $SPLUNK_PROFILER_LOGS_ENDPOINT
 *                                    or http://localhost:4317
 *   SPLUNK_PROFILER_ENABLED=false    no
 *   SPLUNK_PROFILER_LOGS_ENDPOINT    yes, to that endpoint
 *   nothing of the above             no: a plain `--pid` run stays local
 * A flag wins over the environment. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT_DEFAULT_ENDPOINT   "http://localhost:4317"
#define EXPORT_MAX_HEADERS        32
#define EXPORT_MAX_HEADER_LEN     4096
#define EXPORT_DEFAULT_TIMEOUT_MS 10000
#define EXPORT_DEFAULT_MEMORY_MB  64
#define EXPORT_MIN_MEMORY_MB      8
#define EXPORT_MAX_MEMORY_MB      4096

struct export_header {
        char key[128]; /* lowercase, as gRPC metadata requires */
        char value[EXPORT_MAX_HEADER_LEN];
};

struct export_config {
        /* From the command line (cli.c fills these before resolving). */
        const char *endpoint_flag; /* --endpoint, or NULL */
        bool no_export_flag;       /* --no-export */
        int64_t flush_interval_ms; /* --flush-interval; 0 = default */
        int64_t memory_mb;         /* --export-memory-mb; 0 = default */

        /* Resolved by export_config__resolve_from(). */
        bool enabled;
        char endpoint[512]; /* the URL, as given */
        char target[512];   /* gRPC target: host:port */
        bool tls;           /* https:// */
        char ca_file[512];  /* custom CA bundle (PEM), or "" for system roots */
        int64_t timeout_ms;
        size_t n_headers;
        struct export_header headers[EXPORT_MAX_HEADERS];
};

/* Parses an endpoint URL: http:// or https://, a host (or [IPv6]) and an
 * optional port (default 4317), nothing after but an optional "/".
 * Returns false with a one-line reason in `error`. */
bool export_config__parse_endpoint(struct export_config *config, const char *url, char *error,
                                   size_t error_size);

/* Applies the environment under the flags already in `config`, given the
 * sampling interval (for the default flush interval), reading the
 * variables through `lookup` (the daemon's --config file on reload:
 * cli/config_file.h), or getenv when `lookup` is NULL.  Returns false with
 * a one-line reason in `error`. */
typedef const char *(*export_lookup_fn)(void *arg, const char *name);
bool export_config__resolve_from(struct export_config *config, int64_t interval_ms,
                                 export_lookup_fn lookup, void *arg, char *error,
                                 size_t error_size);

/* Whether two resolved configs talk to the collector the same way:
 * endpoint (so TLS), CA file, timeout and headers.  What a running
 * exporter can switch without a restart (exporter__reconfigure). */
bool export_config__same_connection(const struct export_config *a, const struct export_config *b);

/* Decodes a W3C-baggage-style "k1=v1,k2=v2" list (OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_EXPORTER_OTLP_HEADERS): entries split on ',', key and value trimmed
 * and percent-decoded.  Calls `each` per entry; returns false (and stops)
 * on a malformed entry or when `each` returns false. */
bool export_config__parse_kv_list(const char *text,
                                  bool (*each)(void *arg, const char *key, const char *value),
                                  void *arg);
