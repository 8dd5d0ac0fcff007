/* context_format.h — the span-context segment, shared by the writers
 * (context/c/, context/python/) and the reader in splunk-profd.
 *
 * An instrumented process publishes, per OS thread, the span it is
 * currently running: one memfd named CONTEXT_MEMFD_NAME, mapped MAP_SHARED,
 * holding a fixed header and an array of fixed-size slots.  splunk-profd
 * finds it in /proc/PID/maps and copies one slot with process_vm_readv
 * while the slot's thread is stopped (or verified blocked), so a slot is
 * only ever written by its own thread and needs no atomics beyond a
 * sequence counter.  FORMAT.md explains the rules (fork safety, recycled
 * thread ids); this file is the layout.  All integers are little-endian
 * (the host's, x86-64); ids are bytes in canonical order (hex of the bytes
 * is the W3C hex string).  The slot's record part (trace_id .. attrs_size)
 * is laid out as an OTEP 4947 Thread-Local Context Record. */
#pragma once

#include <stdint.h>

#define CONTEXT_MEMFD_NAME    "splunk-profd-ctx"
#define CONTEXT_MAGIC         "SPLKCTX1" /* 8 bytes, no NUL */
#define CONTEXT_VERSION       1u
#define CONTEXT_HEADER_SIZE   64u
#define CONTEXT_SLOT_SIZE     64u
#define CONTEXT_MAX_SLOTS     16384u /* readers reject more */
#define CONTEXT_DEFAULT_SLOTS 1024u

#define CONTEXT_VALID         0x01u /* slot.valid: trace_id/span_id hold a span */
#define CONTEXT_FLAG_INTERNAL 0x01u /* slot.flags: telemetry SDK worker thread */

/* header.flags: the writer claims a thread's slot at its home slot,
 * context_home_slot(), or at the first free slot after it.  The reader
 * then finds a thread it has not indexed yet (a new thread's first span)
 * by copying CONTEXT_PROBE_SLOTS slots from there in the stop window. */
#define CONTEXT_HEADER_HOME_SLOTS 0x01u
#define CONTEXT_PROBE_SLOTS       8u

/* The home slot of `tid` (the id the writer's gettid() returns). */
static inline uint32_t context_home_slot(int32_t tid, uint32_t slot_count)
{
        return slot_count ? (uint32_t)tid % slot_count : 0;
}

struct context_header {
        char magic[8];        /* CONTEXT_MAGIC */
        uint32_t version;     /* CONTEXT_VERSION */
        uint32_t header_size; /* CONTEXT_HEADER_SIZE */
        uint32_t slot_size;   /* CONTEXT_SLOT_SIZE */
        uint32_t slot_count;  /* slots following the header */
        int32_t owner_pid;    /* getpid() of the process that created it */
        uint32_t claims;      /* bumped whenever a slot changes owner */
        uint64_t owner_start; /* creator's start time, /proc/self/stat field 22 */
        uint32_t flags;       /* CONTEXT_HEADER_*, 0 from older writers */
        uint8_t reserved[20];
};

struct context_slot {
        uint32_t seq;        /* seqlock: odd while its thread writes it */
        int32_t tid;         /* owning OS thread id, 0 = free */
        uint64_t start_time; /* owner's /proc/self/task/TID/stat field 22 */
        /* OTEP 4947 Thread-Local Context Record, 28 bytes: */
        uint8_t trace_id[16];
        uint8_t span_id[8];
        uint8_t valid;       /* CONTEXT_VALID */
        uint8_t trace_flags; /* W3C trace flags */
        uint16_t attrs_size; /* always 0 in version 1 */
        /* splunk-profd additions: */
        uint32_t flags; /* CONTEXT_FLAG_* */
        uint8_t reserved[16];
};

_Static_assert(sizeof(struct context_header) == CONTEXT_HEADER_SIZE, "header layout");
_Static_assert(sizeof(struct context_slot) == CONTEXT_SLOT_SIZE, "slot layout");
