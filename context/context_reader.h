/* context_reader.h — splunk-profd's side of the span-context segment
 * (context_format.h, FORMAT.md): find it, keep a tid -> slot index, copy
 * one slot per thread-sample inside the stop window, decode it after.
 *
 * Everything in the segment is untrusted: the header is re-validated
 * every tick, every length is capped, and a bad segment costs one log line
 * per target and nothing else.  The target's memory is only ever read. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/target.h"
#include "context/process_context.h"
#include "context/thread_context.h"

#define CONTEXT_DISCOVER_NS (1000ull * 1000 * 1000) /* re-scan maps at most this often */
#define CONTEXT_INDEX_NS    (20ull * 1000 * 1000)   /* rebuild the index at most this often */
/* ...and, while rebuilds change nothing for our threads, ever more rarely
 * down to this: `claims` is the target's to bump, not a budget of ours. */
#define CONTEXT_INDEX_MAX_NS (1000ull * 1000 * 1000)
#define CONTEXT_INDEX_DUTY   50 /* a rebuild is followed by >= 50x its cost of rest */
/* glibc's thread lists are walked for blocked threads without an fs_base
 * at most this often, or, when the thread set changed, this often (or
 * CONTEXT_INDEX_DUTY times the walk's cost apart, if longer): */
#define CONTEXT_TCB_WALK_NS     (1000ull * 1000 * 1000)
#define CONTEXT_TCB_WALK_MIN_NS (100ull * 1000 * 1000)

struct context_reader {
        pid_t pid;
        pid_t mem_pid;       /* whose maps and memory are read: target->mem_pid */
        pid_t ns_pid;        /* the target's pid in its own namespace (NSpid) */
        uint64_t segment;    /* header address in the target, 0: none */
        uint64_t mapped_len; /* length of its mapping */
        uint32_t slot_count;
        bool home_slots;  /* header.flags has CONTEXT_HEADER_HOME_SLOTS */
        uint32_t claims;  /* header.claims at the last index rebuild */
        bool index_stale; /* a slot no longer names its thread */
        bool warned;      /* one line per target about a bad segment */
        uint64_t next_discover_ns;
        uint64_t scanned_generation; /* maps generation of a scan that found no candidate */
        /* Rebuild pacing (context_reader.c): when the last rebuild ran
         * (0: none yet), the wait before the next, the least wait its
         * cost allows, and target->n_threads then. */
        uint64_t index_last_ns, index_gap_ns, index_floor_ns;
        size_t indexed_threads;
        /* The OpenTelemetry standards: OTEP 4719 process context (resource
         * attributes, thread attribute key map) and OTEP 4947 thread
         * records, read ahead of our own segment. */
        struct process_context process;
        struct thread_context tls;
        /* Walks of glibc's thread lists (thread_tcb.h): when the last ran
         * (0: none yet), the least wait its cost allows, target->n_threads
         * then. */
        uint64_t tcb_walk_ns, tcb_floor_ns;
        size_t tcb_walked_threads;
};

enum context_state {
        CONTEXT_NONE,    /* the thread publishes no span */
        CONTEXT_SPAN,    /* trace_id/span_id are set */
        CONTEXT_UNKNOWN, /* torn, stale or unreadable: no labels */
};

struct context_span {
        char trace_id[33]; /* lowercase hex, full width */
        char span_id[17];
        bool internal; /* the writer marked the thread as SDK-internal */
        /* From an OTEP 4947 record: its attributes, named by the process
         * context's key map (record.n_attrs, record.keys, record.values). */
        struct thread_record record;
};

void context_reader__init(struct context_reader *reader, pid_t pid);

/* Once per tick, after every thread is resumed: refreshes the process
 * context and the thread-context module (thread_context.h), re-validates the header,
 * discovers the segment (rate-limited, or at once when `rediscover`), and
 * rebuilds the tid -> slot index when slots changed owner.  Threads
 * without an fs_base (none yet at the attach, or captured blocked since)
 * learn it from glibc's thread lists (thread_tcb.h), rate-limited.
 * `maps_generation` changes whenever the process's mappings did
 * (address_space__generation), 0 when unknown: /proc/PID/maps is scanned
 * for a segment only when it changed since the last scan, so an idle
 * process without one costs nothing.  `maps_text` (`maps_len` bytes):
 * the maps of that generation (address_space__maps_text), which the scans
 * read instead of /proc/PID/maps, or NULL. */
bool context_reader__refresh(struct context_reader *reader, struct target *target, uint64_t now_ns,
                             bool rediscover, uint64_t maps_generation, const char *maps_text,
                             size_t maps_len);
/* (Returns whether the process context's content changed: the export
 * resource should be rebuilt.) */
void context_reader__clear(struct context_reader *reader);

/* Whether the thread's OTEP 4947 record can be found only once its
 * fs_base is known, which takes one ptrace-stop: the process publishes
 * thread contexts, the thread has never been stopped, and glibc's thread
 * lists (walked by context_reader__refresh) did not give it either. */
bool context_reader__needs_fs_base(const struct context_reader *reader,
                                   const struct tthread *thread);

/* Whether the process publishes span context (our segment, or OTEP 4947
 * thread records under a schema we read): its samples need the slot or
 * record copied in the same instant as the stack. */
bool context_reader__publishes_spans(const struct context_reader *reader);

/* Stop window: copies this thread's slot into its capture with one
 * bounded process_vm_readv; a thread the index has no slot for gets the
 * CONTEXT_PROBE_SLOTS from its home slot instead, in one read too, when the
 * writer places slots by home (nothing otherwise).  Also its OTEP 4947
 * record (two reads; more the first time in dynamic TLS).  A stopped
 * capture's fs_base is remembered for the thread's blocked samples. */
void context_reader__capture(const struct context_reader *reader, struct tthread *thread);

/* After the resume: what the copied slot says about `thread`.  A probe
 * that found the thread's slot sets thread->context_slot. */
enum context_state context_reader__decode(struct context_reader *reader, struct tthread *thread,
                                          struct context_span *span);

/* Pure parts, exposed for unit tests. */
enum context_state context_slot__decode(const uint8_t *bytes, size_t len, pid_t tid,
                                        uint64_t start_time, struct context_span *span);
/* Which of the `len / CONTEXT_SLOT_SIZE` slots in `bytes` is owned by
 * `tid` started at `start_time` (never when 0), or -1. */
int context_probe__find(const uint8_t *bytes, size_t len, pid_t tid, uint64_t start_time);
const char *context_header__check(const void *bytes, size_t len, uint64_t mapped_len, pid_t pid,
                                  pid_t ns_pid);
/* Field 22 (starttime) of a /proc stat line, 0 when malformed. */
uint64_t context_stat__start_time(const char *text);
