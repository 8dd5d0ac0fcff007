/* process_context.h — OTEP 4719 process context, read from outside: the
 * mapping named OTEL_CTX that an OpenTelemetry SDK publishes, whose
 * 32-byte header points to a protobuf ProcessContext
 * (proto/process_context.proto).  Its resource attributes feed the export
 * resource; its threadlocal.* attributes (OTEP 4947) give the thread
 * records' schema version and attribute key map.
 *
 * Everything in it is untrusted: the payload size is capped, the decode is
 * bounded, and a bad context costs one warning per target.  Read outside
 * the stop window only (it allocates). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCESS_CONTEXT_SIGNATURE   "OTEL_CTX" /* 8 bytes, no NUL */
#define PROCESS_CONTEXT_VERSION     2u
#define PROCESS_CONTEXT_HEADER_SIZE 32u
#define PROCESS_CONTEXT_MAX_PAYLOAD (256u << 10)            /* readers reject more */
#define PROCESS_CONTEXT_MAX_ATTRS   64u                     /* resource attributes kept */
#define PROCESS_CONTEXT_MAX_KEYS    256u                    /* OTEP 4947: u8 key index */
#define PROCESS_CONTEXT_MAX_VALUE   1024u                   /* bytes kept per string value */
#define PROCESS_CONTEXT_CHECK_NS    (1000ull * 1000 * 1000) /* header polled this often */
#define PROCESS_CONTEXT_RETRIES     3                       /* published-at changed during a read */

/* OTEP 4947's schema string: the merged text still says tlsdesc_v1_dev
 * (to become tls_v1), and dd-trace-py (libdatadog) publishes
 * tlsdesc_v1_dev; both are accepted. */
#define THREADLOCAL_SCHEMA_DEV "tlsdesc_v1_dev"
#define THREADLOCAL_SCHEMA_V1  "tls_v1"

struct process_context_attr {
        char *key;
        char *str; /* NULL: an int (num) */
        int64_t num;
};

struct process_context {
        pid_t pid;
        uint64_t header;       /* header address in the target, 0: none found */
        uint64_t published_at; /* of the payload decoded, 0: none */
        uint64_t next_check_ns;
        uint64_t scanned_generation; /* maps generation of a scan that found none */
        bool warned;
        uint64_t changes; /* bumped whenever the decoded content changes */
        size_t n_attrs;   /* resource attributes */
        struct process_context_attr attrs[PROCESS_CONTEXT_MAX_ATTRS];
        char *schema_version; /* threadlocal.schema_version, or NULL */
        size_t n_keys;        /* threadlocal.attribute_key_map */
        char *keys[PROCESS_CONTEXT_MAX_KEYS];
};

void process_context__init(struct process_context *context, pid_t pid);
/* Frees what was decoded; the context may be reused after __init. */
void process_context__clear(struct process_context *context);

/* Outside the stop window: finds the mapping (when the maps changed since
 * a scan that found none, or `rediscover`), polls its header at most every
 * PROCESS_CONTEXT_CHECK_NS and re-reads the payload when published-at
 * moved.  Returns whether the decoded content changed.  `maps_text`: the
 * maps of `maps_generation` (proc_maps__open), or NULL. */
bool process_context__refresh(struct process_context *context, uint64_t now_ns, bool rediscover,
                              uint64_t maps_generation, const char *maps_text, size_t maps_len);

/* The attribute name of key index `index`, or NULL when unknown. */
const char *process_context__key(const struct process_context *context, unsigned index);
/* Whether the thread records use a schema we read (threadlocal keys
 * present with a known schema, or absent: a writer without keys). */
bool process_context__tls_schema_ok(const struct process_context *context);

/* Pure parts, for unit tests and fuzzing. */
/* Checks a header copy; NULL, or why not.  Fills size, payload, time. */
const char *process_context_header__check(const void *bytes, size_t len, uint32_t *payload_size,
                                          uint64_t *payload, uint64_t *published_at);
/* Decodes a payload into `context` (replacing what it held); 0 or
 * -EBADMSG / -ENOMEM. */
int process_context__decode(struct process_context *context, const uint8_t *bytes, size_t len);
/* Whether a maps path names a process context mapping. */
bool process_context__maps_name(const char *path);
