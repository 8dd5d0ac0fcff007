/* splunk_profd_context.c — the C writer of the span-context segment.
 *
 * One memfd per process (context_format.h), created on first use.  A
 * thread claims a slot on its first call: the slot already carrying its
 * tid (left behind by a dead thread whose tid was recycled), else a free
 * one, else one whose thread is gone (tgkill(pid, tid, 0) == ESRCH).  The
 * claim records the thread's kernel start time, which splunk-profd checks
 * against /proc, so a recycled tid never inherits a dead thread's span.
 * A pthread key destructor frees the slot at thread exit.
 *
 * Writes are a seqlock: the counter goes odd, the fields change, the
 * counter goes even.  splunk-profd only reads a slot while its thread is
 * stopped, so compiler/release ordering is all that is needed.
 *
 * Fork: the child inherits the parent's MAP_SHARED mapping.  A
 * pthread_atfork child handler unmaps it, creates the child's own segment
 * and re-publishes the forking thread's span there; the old header names
 * the parent as owner, so splunk-profd would reject it for the child
 * anyway.
 *
 * The OpenTelemetry standards are published too, so that any standard
 * reader labels our apps (context/FORMAT.md):
 * - OTEP 4947: the exported TLS variable otel_thread_ctx_v1 points to the
 *   thread's record (a fixed per-thread one, so set/clear never allocate).
 *   set: pointer NULL, record filled, valid = 1, pointer to the record;
 *   clear: pointer NULL.  Readers read a thread only while it is stopped
 *   (ptrace stop, or an eBPF program interrupting it on its own CPU), so
 *   compiler ordering (signal fences) is enough, as in dd-trace-py's
 *   writer; the kernel's entry into the stop orders the CPU's stores.
 * - OTEP 4719: the process context (process_context_writer.c), published
 *   once at init and again in a fork child.
 * Our own segment stays: it carries the internal-thread flag, which the
 * standards have no field for, and it labels threads that have been
 * blocked since before splunk-profd attached (for those the reader has no
 * fs_base, so it cannot find their TLS).  SPLUNK_PROFD_CONTEXT_SEGMENT=0
 * at build time leaves it out (the tests use that to prove the standard
 * path alone labels samples). */
#include "splunk_profd_context.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context_format.h"
#include "process_context_writer.h"

#ifndef SPLUNK_PROFD_CONTEXT_SEGMENT
#define SPLUNK_PROFD_CONTEXT_SEGMENT 1
#endif

/* OTEP 4947 Thread-Local Context Record, without attribute data. */
struct otel_thread_record {
        uint8_t trace_id[16];
        uint8_t span_id[8];
        uint8_t valid;
        uint8_t trace_flags;
        uint16_t attrs_data_size;
} __attribute__((packed, aligned(8)));

_Static_assert(sizeof(struct otel_thread_record) == 32, "28-byte record, 8-aligned");

/* The standard's symbol: exported in .dynsym, one per process. */
__attribute__((visibility("default"))) __thread struct otel_thread_record *otel_thread_ctx_v1;
static __thread struct otel_thread_record otel_record;

struct writer {
        pthread_mutex_t lock; /* creation and claims; never held while writing a span */
        struct context_header *header;
        struct context_slot *slots;
        size_t mapped_len;
        unsigned slot_count;
        unsigned epoch; /* bumped per segment: stale thread-local slot pointers */
        pthread_key_t exit_key;
        int key_ok;
        int ready; /* init ran: hooks installed, process context published */
};

static struct writer writer = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct thread_state {
        struct context_slot *slot;
        unsigned epoch;
        uint8_t trace_id[16], span_id[8], trace_flags, valid;
        uint32_t flags;
};

static __thread struct thread_state self;

static pid_t current_tid(void)
{
        return (pid_t)syscall(SYS_gettid);
}

/* Field 22 (starttime) of a /proc stat file, 0 when unreadable. */
static uint64_t stat_start_time(const char *path)
{
        char text[1024];
        unsigned long long start = 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return 0;
        n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        text[n] = '\0';
        char *p = strrchr(text, ')');
        /* After ")": state is field 3, starttime field 22. */
        for (int field = 2; p && field < 22; field++)
                p = strchr(p + 1, ' ');
        if (p && sscanf(p + 1, "%llu", &start) != 1)
                start = 0;
        return start;
}

static uint64_t thread_start_time(pid_t tid)
{
        char path[64];

        snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
        return stat_start_time(path);
}

static void slot__begin(struct context_slot *slot)
{
        __atomic_store_n(&slot->seq, slot->seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void slot__end(struct context_slot *slot)
{
        __atomic_store_n(&slot->seq, slot->seq + 1, __ATOMIC_RELEASE);
}

/* Maps a fresh segment; called with the lock held (or in a fork child). */
static int writer__create(unsigned slots)
{
        size_t len = CONTEXT_HEADER_SIZE + (size_t)slots * CONTEXT_SLOT_SIZE;
        int fd = memfd_create(CONTEXT_MEMFD_NAME, MFD_CLOEXEC);
        void *mem;

        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t)len) < 0) {
                int err = -errno;
                close(fd);
                return err;
        }
        mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (mem == MAP_FAILED)
                return -errno;
        struct context_header *header = mem;
        header->version = CONTEXT_VERSION;
        header->header_size = CONTEXT_HEADER_SIZE;
        header->slot_size = CONTEXT_SLOT_SIZE;
        header->slot_count = slots;
        header->owner_pid = getpid();
        header->owner_start = stat_start_time("/proc/self/stat");
        header->flags = CONTEXT_HEADER_HOME_SLOTS;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        memcpy(header->magic, CONTEXT_MAGIC, sizeof(header->magic));
        writer.header = header;
        writer.slots = (struct context_slot *)((char *)mem + CONTEXT_HEADER_SIZE);
        writer.mapped_len = len;
        writer.slot_count = slots;
        writer.epoch++;
        return 0;
}

static void thread__exit(void *arg)
{
        (void)arg;
        splunk_profd_context_release_thread();
}

static void writer__after_fork_child(void)
{
        unsigned slots = writer.slot_count;

        pthread_mutex_init(&writer.lock, NULL);
        if (writer.ready) /* MADV_DONTFORK: the child has no process context yet */
                (void)process_context_writer__publish();
        if (!writer.header)
                return;
        munmap(writer.header, writer.mapped_len);
        writer.header = NULL;
        writer.slots = NULL;
        self.slot = NULL;
        if (writer__create(slots) < 0)
                return;
        if (self.valid)
                (void)splunk_profd_context_set(self.trace_id, self.span_id, self.trace_flags);
        if (self.flags)
                (void)splunk_profd_context_mark_internal(1);
}

int splunk_profd_context_init(unsigned slots)
{
        int err = 0;

        if (slots == 0 || slots > CONTEXT_MAX_SLOTS)
                slots = CONTEXT_DEFAULT_SLOTS;
        pthread_mutex_lock(&writer.lock);
        if (!writer.ready) {
                writer.key_ok = pthread_key_create(&writer.exit_key, thread__exit) == 0;
                pthread_atfork(NULL, NULL, writer__after_fork_child);
                err = process_context_writer__publish();
                __atomic_store_n(&writer.ready, 1, __ATOMIC_RELEASE);
        }
        /* The process context is best effort: only our segment's error is
         * the caller's, when there is a segment. */
        if (SPLUNK_PROFD_CONTEXT_SEGMENT)
                err = writer.header ? 0 : writer__create(slots);
        pthread_mutex_unlock(&writer.lock);
        return err;
}

static int tid_alive(pid_t tid)
{
        return syscall(SYS_tgkill, getpid(), tid, 0) == 0 || errno != ESRCH;
}

/* A slot for `tid`, with the lock held; NULL when all are taken.  The
 * first free one from the tid's home slot on (CONTEXT_HEADER_HOME_SLOTS):
 * there splunk-profd finds a new thread's first span before it indexed
 * the thread. */
static struct context_slot *writer__claim(pid_t tid)
{
        struct context_slot *free_slot = NULL, *dead_slot = NULL;
        unsigned home = context_home_slot(tid, writer.slot_count);

        for (unsigned k = 0; k < writer.slot_count; k++) {
                struct context_slot *slot = &writer.slots[(home + k) % writer.slot_count];
                pid_t owner = __atomic_load_n(&slot->tid, __ATOMIC_RELAXED);
                if (owner == tid)
                        return slot; /* left by a dead thread with our recycled tid */
                if (owner == 0 && !free_slot)
                        free_slot = slot;
        }
        if (free_slot)
                return free_slot;
        for (unsigned i = 0; i < writer.slot_count && !dead_slot; i++)
                if (!tid_alive(writer.slots[i].tid))
                        dead_slot = &writer.slots[i];
        return dead_slot;
}

static struct context_slot *thread__slot(void)
{
        if (self.slot && self.epoch == writer.epoch)
                return self.slot;
        if (!writer.header) {
                (void)splunk_profd_context_init(0); /* its error: no segment, checked next */
                if (!__atomic_load_n(&writer.header, __ATOMIC_ACQUIRE))
                        return NULL;
        }
        pid_t tid = current_tid();
        uint64_t start = thread_start_time(tid);
        pthread_mutex_lock(&writer.lock);
        struct context_slot *slot = writer__claim(tid);
        if (slot) {
                slot__begin(slot);
                slot->start_time = start;
                slot->valid = 0;
                slot->flags = 0;
                memset(slot->trace_id, 0, sizeof(slot->trace_id));
                memset(slot->span_id, 0, sizeof(slot->span_id));
                __atomic_store_n(&slot->tid, tid, __ATOMIC_RELEASE);
                slot__end(slot);
                __atomic_fetch_add(&writer.header->claims, 1, __ATOMIC_RELEASE);
                self.slot = slot;
                self.epoch = writer.epoch;
                if (writer.key_ok)
                        pthread_setspecific(writer.exit_key, slot);
        }
        pthread_mutex_unlock(&writer.lock);
        return slot;
}

static int is_zero(const uint8_t *bytes, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (bytes[i])
                        return 0;
        return 1;
}

/* OTEP 4947 attach: no reader sees the record while it changes. */
static void otel_record__publish(const uint8_t trace_id[16], const uint8_t span_id[8],
                                 uint8_t trace_flags)
{
        __atomic_store_n(&otel_thread_ctx_v1, NULL, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        memcpy(otel_record.trace_id, trace_id, 16);
        memcpy(otel_record.span_id, span_id, 8);
        otel_record.trace_flags = trace_flags;
        otel_record.attrs_data_size = 0;
        otel_record.valid = 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&otel_thread_ctx_v1, &otel_record, __ATOMIC_RELAXED);
}

int splunk_profd_context_set(const uint8_t trace_id[16], const uint8_t span_id[8],
                             uint8_t trace_flags)
{
        if (is_zero(trace_id, 16) || is_zero(span_id, 8))
                return splunk_profd_context_clear();
        if (!__atomic_load_n(&writer.ready, __ATOMIC_ACQUIRE))
                (void)splunk_profd_context_init(0); /* the process context first */
        otel_record__publish(trace_id, span_id, trace_flags);
        memcpy(self.trace_id, trace_id, 16);
        memcpy(self.span_id, span_id, 8);
        self.trace_flags = trace_flags;
        self.valid = 1;
        if (!SPLUNK_PROFD_CONTEXT_SEGMENT)
                return 0;
        struct context_slot *slot = thread__slot();
        if (!slot)
                return -ENOSPC;
        slot__begin(slot);
        memcpy(slot->trace_id, trace_id, 16);
        memcpy(slot->span_id, span_id, 8);
        slot->trace_flags = trace_flags;
        slot->valid = CONTEXT_VALID;
        slot__end(slot);
        return 0;
}

int splunk_profd_context_clear(void)
{
        /* OTEP 4947 detach; the record stays as it was, unreferenced. */
        __atomic_store_n(&otel_thread_ctx_v1, NULL, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        self.valid = 0;
        if (!self.slot || self.epoch != writer.epoch)
                return 0; /* never published anything here */
        slot__begin(self.slot);
        self.slot->valid = 0;
        slot__end(self.slot);
        return 0;
}

int splunk_profd_context_mark_internal(int internal)
{
        self.flags = internal ? CONTEXT_FLAG_INTERNAL : 0;
        if (!SPLUNK_PROFD_CONTEXT_SEGMENT)
                return -ENOTSUP; /* the flag lives only in our segment */
        struct context_slot *slot = thread__slot();
        if (!slot)
                return -ENOSPC;
        slot__begin(slot);
        slot->flags = self.flags;
        slot__end(slot);
        return 0;
}

void splunk_profd_context_release_thread(void)
{
        struct context_slot *slot = self.slot;

        if (!slot || self.epoch != writer.epoch)
                return;
        self.slot = NULL;
        slot__begin(slot);
        slot->valid = 0;
        slot->flags = 0;
        slot->start_time = 0;
        slot__end(slot);
        __atomic_store_n(&slot->tid, 0, __ATOMIC_RELEASE);
        __atomic_fetch_add(&writer.header->claims, 1, __ATOMIC_RELEASE);
        if (writer.key_ok)
                pthread_setspecific(writer.exit_key, NULL);
}
