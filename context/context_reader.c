/* context_reader.c — reads the span-context segment of one target.
 *
 * Discovery: /proc/PID/maps lines whose path starts with
 * "/memfd:splunk-profd-ctx"; the first whose header passes
 * context_header__check() (magic, version, sizes, slot count within
 * CONTEXT_MAX_SLOTS and within the mapping, owner pid = the target) wins.
 * A forked child's inherited copy of its parent's segment names the
 * parent as owner and is rejected.
 *
 * Index: slot numbers per thread are kept in the threads themselves
 * (tthread.context_slot), rebuilt from one bulk copy of the slot array
 * whenever header.claims moves or a slot stopped naming its thread.  The
 * stop window then costs one 64-byte process_vm_readv.  The target
 * decides how often claims moves, so rebuilds are paced (reader__reindex):
 * one that changed no thread's slot doubles the wait before the next, up
 * to CONTEXT_INDEX_MAX_NS, and every wait is at least CONTEXT_INDEX_DUTY
 * times the rebuild's own cost.  A process that bumps claims in a loop
 * thus costs about one rebuild a second; a new thread of ours resets the
 * pacing, since a thread's first span is what claims a slot.
 *
 * Home slots: a writer that sets CONTEXT_HEADER_HOME_SLOTS claims a
 * thread's slot at tid % slot_count or just after.  A thread the index
 * has no slot for then gets CONTEXT_PROBE_SLOTS slots from there copied in
 * its stop window instead (the same one read), so a new thread's first
 * span is labelled from its first sample, before any rebuild could run.
 *
 * Decoding trusts a slot only when its sequence is even, its tid is the
 * sampled thread and its start time is that thread's start time from
 * /proc: a recycled tid has a different start time, so it never inherits a
 * dead thread's span. */
#include "context/context_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/remote_memory.h"
#include "context/context_format.h"
#include "context/thread_tcb.h"
#include "symbolize/proc_maps.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/hex.h"
#include "util/log.h"

_Static_assert(CAPTURE_SPAN_SLOT_BYTES == CONTEXT_PROBE_SLOTS * CONTEXT_SLOT_SIZE,
               "capture holds one probe window");

#define MAPS_MAX_LINES 200000

static pid_t read_ns_pid(pid_t pid)
{
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], line[256];
        pid_t ns_pid = pid;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "NSpid:", 6) != 0)
                        continue;
                /* The last entry is the pid in the innermost namespace. */
                for (char *p = strtok(line + 6, " \t\n"); p; p = strtok(NULL, " \t\n"))
                        ns_pid = (pid_t)atoi(p);
                break;
        }
        return ns_pid;
}

static void refresh_segment(struct context_reader *reader, struct target *target, uint64_t now_ns,
                            bool rediscover, uint64_t maps_generation, const char *maps_text,
                            size_t maps_len);

void context_reader__init(struct context_reader *reader, pid_t pid)
{
        memset(reader, 0, sizeof(*reader));
        reader->pid = reader->mem_pid = pid;
        reader->ns_pid = read_ns_pid(pid);
        process_context__init(&reader->process, pid);
        thread_context__init(&reader->tls, pid);
}

void context_reader__clear(struct context_reader *reader)
{
        process_context__clear(&reader->process);
}

uint64_t context_stat__start_time(const char *text)
{
        const char *p = strrchr(text, ')');
        unsigned long long start = 0;

        /* After ")" the state is field 3; starttime is field 22. */
        for (int field = 2; p && field < 22; field++)
                p = strchr(p + 1, ' ');
        if (!p || sscanf(p + 1, "%llu", &start) != 1)
                return 0;
        return start;
}

static uint64_t thread_start_time(const struct tthread *thread)
{
        char text[1024];
        ssize_t n = pread(thread->files.stat_fd, text, sizeof(text) - 1, 0);

        if (n <= 0)
                return 0;
        text[n] = '\0';
        return context_stat__start_time(text);
}

const char *context_header__check(const void *bytes, size_t len, uint64_t mapped_len, pid_t pid,
                                  pid_t ns_pid)
{
        struct context_header header;

        if (len < sizeof(header))
                return "short header";
        memcpy(&header, bytes, sizeof(header));
        if (memcmp(header.magic, CONTEXT_MAGIC, sizeof(header.magic)) != 0)
                return "bad magic";
        if (header.version != CONTEXT_VERSION)
                return "unsupported version";
        if (header.header_size != CONTEXT_HEADER_SIZE || header.slot_size != CONTEXT_SLOT_SIZE)
                return "bad header or slot size";
        if (header.slot_count == 0 || header.slot_count > CONTEXT_MAX_SLOTS)
                return "bad slot count";
        if (CONTEXT_HEADER_SIZE + (uint64_t)header.slot_count * CONTEXT_SLOT_SIZE > mapped_len)
                return "slots beyond the mapping";
        if (header.owner_pid != pid && header.owner_pid != ns_pid)
                return "owned by another process";
        return NULL;
}

static void reader__warn(struct context_reader *reader, uint64_t address, const char *why)
{
        if (reader->warned)
                return;
        reader->warned = true;
        log_warning("PID %d: ignoring span context segment at 0x%" PRIx64 ": %s", (int)reader->pid,
                    address, why);
}

/* Reads and checks the header at `address`; NULL or why not. */
static const char *reader__check_at(struct context_reader *reader, uint64_t address,
                                    uint64_t mapped_len, struct context_header *header)
{
        ssize_t n = remote_memory__read(reader->mem_pid, address, header, sizeof(*header));

        if (n != (ssize_t)sizeof(*header))
                return "unreadable";
        return context_header__check(header, sizeof(*header), mapped_len, reader->pid,
                                     reader->ns_pid);
}

static void reader__forget(struct context_reader *reader, struct target *target)
{
        reader->segment = 0;
        for (size_t i = 0; i < target->n_threads; i++)
                target->threads[i]->context_slot = 0;
}

static bool maps_line__candidate(const char *line, uint64_t *start, uint64_t *len)
{
        unsigned long long lo, hi;
        int path_at = 0;

        if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &lo, &hi, &path_at) < 2 || !path_at ||
            hi <= lo)
                return false;
        if (strncmp(line + path_at, "/memfd:" CONTEXT_MEMFD_NAME,
                    strlen("/memfd:" CONTEXT_MEMFD_NAME)) != 0)
                return false;
        *start = lo;
        *len = hi - lo;
        return true;
}

/* Returns whether the maps named any candidate mapping (found or not). */
static bool reader__discover(struct context_reader *reader, struct target *target,
                             const char *maps_text, size_t maps_len)
{
        _cleanup_fclose_ FILE *maps = proc_maps__open(reader->mem_pid, maps_text, maps_len);
        char line[512];
        const char *why = NULL;
        uint64_t bad_at = 0;
        bool line_start = true, any = false;

        for (int n = 0; maps && n < MAPS_MAX_LINES && fgets(line, sizeof(line), maps); n++) {
                bool candidate = false;
                uint64_t start = 0, len = 0;
                struct context_header header;
                if (line_start)
                        candidate = maps_line__candidate(line, &start, &len);
                line_start = strchr(line, '\n') != NULL; /* long lines come in pieces */
                if (!candidate)
                        continue;
                any = true;
                const char *bad = reader__check_at(reader, start, len, &header);
                if (!bad) {
                        reader->segment = start;
                        reader->mapped_len = len;
                        reader->slot_count = header.slot_count;
                        reader->home_slots = header.flags & CONTEXT_HEADER_HOME_SLOTS;
                        reader->claims = header.claims - 1; /* force an index build */
                        reader->index_last_ns = 0;          /* index at once */
                        reader->index_gap_ns = 0;
                        log_info("PID %d: span context segment at 0x%" PRIx64 ", %u slots",
                                 (int)reader->pid, start, header.slot_count);
                        return true;
                }
                /* An inherited parent segment is normal after fork. */
                if (strcmp(bad, "owned by another process") != 0) {
                        why = bad;
                        bad_at = start;
                }
        }
        if (why)
                reader__warn(reader, bad_at, why);
        return any;
}

struct slot_key {
        pid_t tid;
        uint32_t index;
        uint64_t start_time;
};

static int slot_key__compare(const void *a, const void *b)
{
        const struct slot_key *x = a, *y = b;

        return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The slot of `tid` started at `start`, or 0; keys are sorted by tid. */
static uint32_t slot_keys__find(const struct slot_key *keys, size_t n, pid_t tid, uint64_t start)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (keys[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (; lo < n && keys[lo].tid == tid; lo++)
                if (keys[lo].start_time == start)
                        return keys[lo].index + 1;
        return 0;
}

/* Returns whether any thread's slot changed. */
static bool reader__index(struct context_reader *reader, struct target *target)
{
        size_t len = (size_t)reader->slot_count * CONTEXT_SLOT_SIZE, n = 0;
        _cleanup_free_ struct context_slot *slots = malloc(len);
        _cleanup_free_ struct slot_key *keys = calloc(reader->slot_count, sizeof(struct slot_key));
        bool changed = false;

        if (!slots || !keys)
                return false;
        if (remote_memory__read(reader->mem_pid, reader->segment + CONTEXT_HEADER_SIZE, slots,
                                len) != (ssize_t)len) {
                reader__warn(reader, reader->segment, "slots unreadable");
                reader__forget(reader, target);
                return true;
        }
        for (uint32_t i = 0; i < reader->slot_count; i++)
                if (slots[i].tid > 0)
                        keys[n++] = (struct slot_key){slots[i].tid, i, slots[i].start_time};
        qsort(keys, n, sizeof(*keys), slot_key__compare);
        for (size_t i = 0; i < target->n_threads; i++) {
                struct tthread *thread = target->threads[i];
                if (!thread->context_start)
                        thread->context_start = thread_start_time(thread);
                /* A slot names the thread as the target knows it. */
                uint32_t slot =
                    slot_keys__find(keys, n, target__ns_tid(target, thread), thread->context_start);
                changed |= slot != thread->context_slot;
                thread->context_slot = slot;
        }
        reader->index_stale = false;
        return changed;
}

/* The thread's id as its slot names it (in the target's PID namespace):
 * read by reader__index, before any slot of the thread is decoded. */
static pid_t slot_tid(const struct tthread *thread)
{
        return thread->ns_tid ? thread->ns_tid : thread->tid;
}

/* Rebuilds the index and sets when the next rebuild may come. */
static void reader__reindex(struct context_reader *reader, struct target *target, uint64_t now_ns)
{
        uint64_t begin = clock__ns(CLOCK_MONOTONIC), least, gap;
        bool changed = reader__index(reader, target);

        least = (clock__ns(CLOCK_MONOTONIC) - begin) * CONTEXT_INDEX_DUTY;
        least = least > CONTEXT_INDEX_NS ? least : CONTEXT_INDEX_NS;
        gap = reader->index_gap_ns * 2;
        gap = gap < CONTEXT_INDEX_MAX_NS ? gap : CONTEXT_INDEX_MAX_NS;
        if (changed || gap < least)
                gap = least;
        reader->index_floor_ns = least;
        reader->index_gap_ns = gap;
        reader->index_last_ns = now_ns;
        reader->indexed_threads = target->n_threads;
}

/* Whether a rebuild may run now; a changed thread set (a new thread's
 * first span claims a slot) cuts a long wait short. */
static bool reader__index_allowed(const struct context_reader *reader, const struct target *target,
                                  uint64_t now_ns)
{
        uint64_t wait = target->n_threads != reader->indexed_threads ? reader->index_floor_ns
                                                                     : reader->index_gap_ns;

        return !reader->index_last_ns || now_ns >= reader->index_last_ns + wait;
}

/* Whether `thread` still lacks the fs_base that would locate its record:
 * at the attach every thread does; later only one just captured blocked
 * (a running thread gets its own at its next stop). */
static bool lacks_fs_base(const struct context_reader *reader, const struct tthread *thread)
{
        return !thread->tls_fs_base && !thread->exited &&
               (!reader->tcb_walk_ns ||
                (thread->captured && thread->capture.kind == CAPTURE_BLOCKED));
}

static const struct thread_tcb_entry *tcb_entries__find(const struct thread_tcb_entry *entries,
                                                        size_t n, pid_t tid)
{
        for (size_t i = 0; i < n; i++)
                if (entries[i].tid == tid)
                        return &entries[i];
        return NULL;
}

/* Gives threads that lack an fs_base the TCB glibc's thread lists name for
 * their tid, so that none is stopped just to learn it.  The walk is
 * believed only when it names one of our threads and agrees with every
 * fs_base a stop gave. */
static void reader__learn_fs_bases(struct context_reader *reader, struct target *target,
                                   uint64_t now_ns)
{
        size_t missing = 0, learnt = 0, matched = 0;

        for (size_t i = 0; i < target->n_threads; i++)
                missing += lacks_fs_base(reader, target->threads[i]);
        if (!missing || !reader->tls.rtld_global || !reader->tls.has_module ||
            !process_context__tls_schema_ok(&reader->process))
                return;
        uint64_t wait = target->n_threads != reader->tcb_walked_threads ? reader->tcb_floor_ns
                                                                        : CONTEXT_TCB_WALK_NS;
        if (reader->tcb_walk_ns && now_ns < reader->tcb_walk_ns + wait)
                return;
        uint64_t begin = clock__ns(CLOCK_MONOTONIC);
        reader->tcb_walk_ns = now_ns;
        reader->tcb_walked_threads = target->n_threads;
        size_t max = 2 * target->n_threads + 64; /* room for threads born meanwhile */
        _cleanup_free_ struct thread_tcb_entry *entries = calloc(max, sizeof(*entries));
        int n = entries ? thread_tcb__walk(reader->mem_pid, reader->tls.rtld_global,
                                           reader->tls.rtld_global_size, entries, max)
                        : -ENOMEM;
        /* ~4 µs a thread: a big process whose threads come and go waits
         * longer (CONTEXT_INDEX_DUTY times the walk's cost). */
        uint64_t least = (clock__ns(CLOCK_MONOTONIC) - begin) * CONTEXT_INDEX_DUTY;
        reader->tcb_floor_ns = least > CONTEXT_TCB_WALK_MIN_NS ? least : CONTEXT_TCB_WALK_MIN_NS;
        if (n <= 0)
                return;
        for (size_t i = 0; i < target->n_threads; i++) {
                struct tthread *thread = target->threads[i];
                const struct thread_tcb_entry *e =
                    tcb_entries__find(entries, (size_t)n, target__ns_tid(target, thread));
                if (!e)
                        continue;
                if (thread->tls_fs_base && thread->tls_fs_base != e->tcb) {
                        log_debug("PID %d: glibc's thread lists disagree with thread %d's fs_base",
                                  (int)reader->pid, (int)thread->tid);
                        return;
                }
                matched++;
        }
        for (size_t i = 0; matched && i < target->n_threads; i++) {
                struct tthread *thread = target->threads[i];
                const struct thread_tcb_entry *e =
                    tcb_entries__find(entries, (size_t)n, target__ns_tid(target, thread));
                if (e && !thread->tls_fs_base && !thread->exited) {
                        thread->tls_fs_base = e->tcb;
                        learnt++;
                }
        }
        log_debug("PID %d: %d threads in glibc's thread lists, fs_base learnt for %zu",
                  (int)reader->pid, n, learnt);
}

bool context_reader__refresh(struct context_reader *reader, struct target *target, uint64_t now_ns,
                             bool rediscover, uint64_t maps_generation, const char *maps_text,
                             size_t maps_len)
{
        bool changed;

        /* The leader called pthread_exit: read through a live thread. */
        reader->mem_pid = reader->process.pid = reader->tls.pid = target->mem_pid;
        changed = process_context__refresh(&reader->process, now_ns, rediscover, maps_generation,
                                           maps_text, maps_len);

        thread_context__refresh(&reader->tls, now_ns, rediscover, maps_generation, maps_text,
                                maps_len);
        reader__learn_fs_bases(reader, target, now_ns);
        refresh_segment(reader, target, now_ns, rediscover, maps_generation, maps_text, maps_len);
        return changed;
}

static void refresh_segment(struct context_reader *reader, struct target *target, uint64_t now_ns,
                            bool rediscover, uint64_t maps_generation, const char *maps_text,
                            size_t maps_len)
{
        struct context_header header;

        if (rediscover)
                reader__forget(reader, target);
        if (reader->segment) {
                const char *bad =
                    reader__check_at(reader, reader->segment, reader->mapped_len, &header);
                if (bad || header.slot_count != reader->slot_count) {
                        reader__warn(reader, reader->segment, bad ? bad : "slot count changed");
                        reader__forget(reader, target);
                        reader->next_discover_ns = now_ns + CONTEXT_DISCOVER_NS;
                        return;
                }
                reader->home_slots = header.flags & CONTEXT_HEADER_HOME_SLOTS;
        } else {
                if (!rediscover &&
                    (now_ns < reader->next_discover_ns ||
                     (maps_generation && maps_generation == reader->scanned_generation)))
                        return;
                reader->next_discover_ns = now_ns + CONTEXT_DISCOVER_NS;
                /* A segment being set up (or a parent's, after fork) is
                 * looked at again; maps without any are not, until they
                 * change. */
                reader->scanned_generation =
                    reader__discover(reader, target, maps_text, maps_len) ? 0 : maps_generation;
                if (!reader->segment)
                        return;
                header.claims = reader->claims + 1;
        }
        if ((header.claims != reader->claims || reader->index_stale) &&
            reader__index_allowed(reader, target, now_ns)) {
                reader->claims = header.claims;
                reader__reindex(reader, target, now_ns);
        }
}

bool context_reader__needs_fs_base(const struct context_reader *reader,
                                   const struct tthread *thread)
{
        return !thread->tls_fs_base && reader->tls.has_module &&
               process_context__tls_schema_ok(&reader->process);
}

bool context_reader__publishes_spans(const struct context_reader *reader)
{
        return reader->segment ||
               (reader->tls.has_module && process_context__tls_schema_ok(&reader->process));
}

void context_reader__capture(const struct context_reader *reader, struct tthread *thread)
{
        if (thread->capture.kind == CAPTURE_STOPPED)
                thread->tls_fs_base = thread->capture.regs.fs_base;
        if (process_context__tls_schema_ok(&reader->process))
                thread_context__capture(&reader->tls, &thread->capture, thread->tls_fs_base,
                                        &thread->tls_var, &thread->tls_var_serial);
        thread->context_probe = 0;
        if (!reader->segment)
                return;
        uint64_t slots = reader->segment + CONTEXT_HEADER_SIZE;
        if (thread->context_slot != 0 && thread->context_slot <= reader->slot_count) {
                (void)capture__copy_span_slots(&thread->capture,
                                               slots + (uint64_t)(thread->context_slot - 1) *
                                                           CONTEXT_SLOT_SIZE,
                                               CONTEXT_SLOT_SIZE);
                return;
        }
        if (!reader->home_slots)
                return; /* an older writer: only the index finds its slots */
        /* Not indexed yet (a new thread's first span): where the writer
         * put it if its home was free or nearly so.  Up to 512 bytes,
         * still one read; the window stops at the array's end. */
        uint32_t home = context_home_slot(slot_tid(thread), reader->slot_count);
        uint32_t n = reader->slot_count - home;
        n = n < CONTEXT_PROBE_SLOTS ? n : CONTEXT_PROBE_SLOTS;
        thread->context_probe = home + 1;
        (void)capture__copy_span_slots(&thread->capture, slots + (uint64_t)home * CONTEXT_SLOT_SIZE,
                                       (size_t)n * CONTEXT_SLOT_SIZE);
}

enum context_state context_slot__decode(const uint8_t *bytes, size_t len, pid_t tid,
                                        uint64_t start_time, struct context_span *span)
{
        struct context_slot slot;

        memset(span, 0, sizeof(*span));
        if (len != sizeof(slot) || start_time == 0)
                return CONTEXT_UNKNOWN;
        memcpy(&slot, bytes, sizeof(slot));
        if ((slot.seq & 1) || slot.tid != tid || slot.start_time != start_time)
                return CONTEXT_UNKNOWN;
        span->internal = (slot.flags & CONTEXT_FLAG_INTERNAL) != 0;
        if (!(slot.valid & CONTEXT_VALID) || hex__all_zero(slot.trace_id, sizeof(slot.trace_id)) ||
            hex__all_zero(slot.span_id, sizeof(slot.span_id)))
                return CONTEXT_NONE;
        hex__encode(span->trace_id, slot.trace_id, sizeof(slot.trace_id));
        hex__encode(span->span_id, slot.span_id, sizeof(slot.span_id));
        return CONTEXT_SPAN;
}

int context_probe__find(const uint8_t *bytes, size_t len, pid_t tid, uint64_t start_time)
{
        struct context_slot slot;

        for (size_t i = 0; start_time && (i + 1) * sizeof(slot) <= len; i++) {
                memcpy(&slot, bytes + i * sizeof(slot), sizeof(slot));
                if (slot.tid == tid && slot.start_time == start_time)
                        return (int)i;
        }
        return -1;
}

/* The copied bytes of the thread's own slot, or NULL.  A probe window
 * that holds it teaches the thread its slot, so that later stops copy
 * just that one; a copied slot that no longer names the thread is
 * forgotten (the next stop probes again) and calls for a re-index. */
static const uint8_t *reader__own_slot(struct context_reader *reader, struct tthread *thread)
{
        const struct capture *capture = &thread->capture;

        if (capture->span_slot_len < CONTEXT_SLOT_SIZE)
                return NULL;
        if (!thread->context_start) /* a new thread: once, after the resume */
                thread->context_start = thread_start_time(thread);
        if (thread->context_probe) {
                int i = context_probe__find(capture->span_slot, capture->span_slot_len,
                                            slot_tid(thread), thread->context_start);
                if (i < 0)
                        return NULL;
                thread->context_slot = thread->context_probe + (uint32_t)i;
                return capture->span_slot + (size_t)i * CONTEXT_SLOT_SIZE;
        }
        int32_t tid;
        memcpy(&tid, capture->span_slot + 4, sizeof(tid));
        if (tid != slot_tid(thread)) {
                reader->index_stale = true;
                thread->context_slot = 0;
        }
        return capture->span_slot;
}

enum context_state context_reader__decode(struct context_reader *reader, struct tthread *thread,
                                          struct context_span *span)
{
        const struct capture *capture = &thread->capture;
        const uint8_t *own = reader__own_slot(reader, thread);

        /* OTEP 4947 first: a valid record is the SDK's own view. */
        if (capture->thread_record_state == 2 &&
            thread_record__decode(capture->thread_record, capture->thread_record_len,
                                  &reader->process, &span->record) == THREAD_RECORD_SPAN) {
                memcpy(span->trace_id, span->record.trace_id, sizeof(span->trace_id));
                memcpy(span->span_id, span->record.span_id, sizeof(span->span_id));
                span->internal = false;
                if (span->record.unknown_key) /* the map grew: look again soon */
                        reader->process.next_check_ns = 0;
                if (own) {
                        struct context_span slot;
                        (void)context_slot__decode(own, CONTEXT_SLOT_SIZE, slot_tid(thread),
                                                   thread->context_start, &slot);
                        span->internal = slot.internal;
                }
                return CONTEXT_SPAN;
        }
        span->record.n_attrs = 0;
        if (!own) {
                memset(span, 0, sizeof(*span));
                return CONTEXT_UNKNOWN;
        }
        return context_slot__decode(own, CONTEXT_SLOT_SIZE, slot_tid(thread), thread->context_start,
                                    span);
}
