/* perf_sampler.c — see perf_sampler.h.
 *
 * The ring is the kernel's perf mmap layout: one header page (struct
 * perf_event_mmap_page: data_head written by the kernel, data_tail by us,
 * the mapping being writable so that unread records are never
 * overwritten: the kernel drops new ones and reports them in a
 * PERF_RECORD_LOST), then data_size bytes of records that wrap around.
 * A sample record, for our sample_type, is
 *   u32 pid, tid; u64 time; u64 period;
 *   u64 abi; u64 regs[popcount(sample_regs_user)]   (regs only if abi != 0)
 *   u64 size; u8 data[size]; u64 dyn_size           (data only if size != 0)
 * where dyn_size <= size bytes of data are the stack actually copied. */
#include "attach/perf_sampler.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The registers the unwinder sets (unwind/native_unwinder.c): the
 * general-purpose ones and IP.  The sample holds them in bit order. */
#define REG_BIT(r) (1ull << PERF_REG_X86_##r)
#define REGS_MASK                                                                                  \
        (REG_BIT(AX) | REG_BIT(BX) | REG_BIT(CX) | REG_BIT(DX) | REG_BIT(SI) | REG_BIT(DI) |       \
         REG_BIT(BP) | REG_BIT(SP) | REG_BIT(IP) | REG_BIT(R8) | REG_BIT(R9) | REG_BIT(R10) |      \
         REG_BIT(R11) | REG_BIT(R12) | REG_BIT(R13) | REG_BIT(R14) | REG_BIT(R15))
#define N_REGS 17

#define SAMPLE_TYPE                                                                                \
        (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER |         \
         PERF_SAMPLE_STACK_USER)

/* Bytes of a sample before its stack data: pid/tid, time, period, abi,
 * regs, size. */
#define SAMPLE_PREFIX (8 + 8 + 8 + 8 + N_REGS * 8 + 8)

void perf_sampler__init(struct perf_sampler *sampler)
{
        memset(sampler, 0, sizeof(*sampler));
        sampler->fd = -1;
}

static void fill_attr(struct perf_event_attr *attr, const struct perf_sampler_config *config)
{
        memset(attr, 0, sizeof(*attr));
        attr->size = sizeof(*attr);
        attr->type = PERF_TYPE_SOFTWARE;
        attr->config = PERF_COUNT_SW_TASK_CLOCK;
        attr->sample_period = config->period_ns < PERF_SAMPLER_FIRST_PERIOD_NS
                                  ? config->period_ns
                                  : PERF_SAMPLER_FIRST_PERIOD_NS;
        attr->sample_type = SAMPLE_TYPE;
        attr->sample_regs_user = REGS_MASK;
        attr->sample_stack_user = config->stack_bytes & ~7u;
        attr->exclude_hv = 1;
        attr->use_clockid = 1;
        attr->clockid = CLOCK_MONOTONIC;
        /* Nobody polls the fd: wake-ups only cost, so ask for them rarely. */
        attr->watermark = 1;
        attr->wakeup_watermark = (uint32_t)(config->ring_pages * (uint64_t)getpagesize() / 2);
}

static int open_event(pid_t tid, const struct perf_sampler_config *config)
{
        struct perf_event_attr attr;
        long fd;

        fill_attr(&attr, config);
        fd = syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        return fd < 0 ? -errno : (int)fd;
}

int perf_sampler__probe(const struct perf_sampler_config *config)
{
        int fd = open_event(0, config);

        if (fd < 0)
                return fd;
        close(fd);
        return 0;
}

int perf_sampler__open(struct perf_sampler *sampler, pid_t tid,
                       const struct perf_sampler_config *config)
{
        size_t page = (size_t)getpagesize();
        int fd, r;

        perf_sampler__init(sampler);
        if (config->period_ns == 0 || config->ring_pages == 0 ||
            (config->ring_pages & (config->ring_pages - 1)))
                return -EINVAL;
        fd = open_event(tid, config);
        if (fd < 0)
                return fd;
        sampler->map_len = (1 + (size_t)config->ring_pages) * page;
        void *base = mmap(NULL, sampler->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
                r = -errno;
                close(fd);
                perf_sampler__init(sampler);
                return r;
        }
        sampler->fd = fd;
        sampler->base = base;
        if (config->period_ns > PERF_SAMPLER_FIRST_PERIOD_NS)
                sampler->period_ns = config->period_ns;
        sampler->regular_ns = config->period_ns;
        sampler->data_size = (uint64_t)config->ring_pages * page;
        return 0;
}

void perf_sampler__close(struct perf_sampler *sampler)
{
        if (!sampler)
                return;
        if (sampler->base)
                munmap(sampler->base, sampler->map_len);
        if (sampler->fd >= 0)
                close(sampler->fd);
        perf_sampler__init(sampler);
}

static struct perf_event_mmap_page *header_of(const struct perf_sampler *sampler)
{
        return (struct perf_event_mmap_page *)sampler->base;
}

static uint64_t head_of(const struct perf_sampler *sampler)
{
        return __atomic_load_n(&header_of(sampler)->data_head, __ATOMIC_ACQUIRE);
}

static uint64_t tail_of(const struct perf_sampler *sampler)
{
        return header_of(sampler)->data_tail;
}

/* Everything read before this store is ours: the kernel may reuse it. */
static void set_tail(struct perf_sampler *sampler, uint64_t tail)
{
        __atomic_store_n(&header_of(sampler)->data_tail, tail, __ATOMIC_RELEASE);
}

bool perf_sampler__pending(const struct perf_sampler *sampler)
{
        return sampler->base && head_of(sampler) != tail_of(sampler);
}

void perf_sampler__discard(struct perf_sampler *sampler)
{
        if (sampler->base)
                set_tail(sampler, head_of(sampler));
}

/* Copies len bytes at ring position pos (a running offset, wrapped here). */
static void ring_copy(const struct perf_sampler *sampler, uint64_t pos, void *dst, size_t len)
{
        const uint8_t *data = sampler->base + (size_t)getpagesize();
        size_t at = (size_t)(pos & (sampler->data_size - 1));
        size_t first = len < sampler->data_size - at ? len : (size_t)(sampler->data_size - at);

        memcpy(dst, data + at, first);
        if (len > first)
                memcpy((uint8_t *)dst + first, data, len - first);
}

static void set_registers(struct capture *capture, const uint64_t *r)
{
        struct user_regs_struct *regs = &capture->regs;
        uint64_t fs_base = regs->fs_base; /* the caller's, kept (perf has none) */

        memset(regs, 0, sizeof(*regs));
        regs->rax = r[0], regs->rbx = r[1], regs->rcx = r[2], regs->rdx = r[3];
        regs->rsi = r[4], regs->rdi = r[5], regs->rbp = r[6], regs->rsp = r[7];
        regs->rip = r[8];
        regs->r8 = r[9], regs->r9 = r[10], regs->r10 = r[11], regs->r11 = r[12];
        regs->r12 = r[13], regs->r13 = r[14], regs->r14 = r[15], regs->r15 = r[16];
        regs->orig_rax = (uint64_t)-1; /* not known: no system call implied */
        regs->fs_base = fs_base;
}

static void begin_capture(struct capture *capture, pid_t pid, pid_t tid)
{
        capture->pid = pid;
        capture->tid = tid;
        capture->kind = CAPTURE_PERF;
        capture->bp_known = true;
        memset(&capture->blocked, 0, sizeof(capture->blocked));
        capture->interp.n_regions = capture->interp.used = 0;
        capture->span_slot_len = 0;
        capture->thread_record_state = 0;
        capture->stack_cut_at_hint = false;
        capture->stack_len = 0;
}

enum sample_read {
        SAMPLE_OK,
        SAMPLE_NO_REGS, /* no user registers (a thread exiting): skipped */
        SAMPLE_BAD,     /* its fields do not fit the record it claims to be */
};

/* One PERF_RECORD_SAMPLE of `size` bytes at `pos`. */
static enum sample_read read_sample(const struct perf_sampler *sampler, uint64_t pos, size_t size,
                                    struct capture *capture, struct perf_sample_info *info)
{
        uint64_t words[4 + N_REGS + 1]; /* pid/tid, time, period, abi, regs, size */
        uint64_t dyn_size = 0, stack_size;
        size_t off = sizeof(struct perf_event_header);

        if (size < off + SAMPLE_PREFIX - N_REGS * 8)
                return SAMPLE_BAD;
        ring_copy(sampler, pos + off, words, 4 * 8);
        info->time_ns = words[1];
        info->period_ns = words[2];
        off += 4 * 8;
        if (words[3] == 0) /* abi: no user registers, nothing to unwind */
                return SAMPLE_NO_REGS;
        if (size < off + N_REGS * 8 + 8)
                return SAMPLE_BAD;
        ring_copy(sampler, pos + off, words + 4, N_REGS * 8);
        off += N_REGS * 8;
        set_registers(capture, words + 4);
        ring_copy(sampler, pos + off, &stack_size, 8);
        off += 8;
        if (stack_size > size - off || (stack_size && size - off - stack_size < 8))
                return SAMPLE_BAD;
        if (stack_size)
                ring_copy(sampler, pos + off + stack_size, &dyn_size, 8);
        if (dyn_size > stack_size)
                return SAMPLE_BAD;
        capture->stack_start = capture->regs.rsp;
        if (capture->stack && dyn_size) {
                size_t len =
                    dyn_size < capture->stack_capacity ? (size_t)dyn_size : capture->stack_capacity;
                ring_copy(sampler, pos + off, capture->stack, len);
                capture->stack_len = len;
        }
        return SAMPLE_OK;
}

/* After the first sample: the regular period from now on, and the CPU
 * time of the short-period samples already in the ring, whose records are
 * dropped (counted in *period_ns), so that none waits behind the first. */
static bool end_first_period(struct perf_sampler *sampler, uint64_t *period_ns)
{
        uint64_t period = sampler->period_ns, head, tail;

        sampler->period_ns = 0;
        if (ioctl(sampler->fd, PERF_EVENT_IOC_PERIOD, &period) < 0)
                return false;
        head = head_of(sampler);
        tail = tail_of(sampler);
        for (uint64_t n = 0; n <= sampler->data_size / sizeof(struct perf_event_header); n++) {
                struct perf_event_header header;
                uint64_t words[3]; /* pid/tid, time, period */

                if (head - tail < sizeof(header) || head - tail > sampler->data_size)
                        break;
                ring_copy(sampler, tail, &header, sizeof(header));
                if (header.size < sizeof(header) || header.size > head - tail)
                        break;
                if (header.type == PERF_RECORD_SAMPLE && header.size >= sizeof(header) + 24) {
                        ring_copy(sampler, tail + sizeof(header), words, sizeof(words));
                        *period_ns += words[2]; /* a short one (the kernel says 1 ms) */
                }
                tail += header.size;
        }
        set_tail(sampler, tail);
        return true;
}

int perf_sampler__next(struct perf_sampler *sampler, struct capture *capture, pid_t pid, pid_t tid,
                       struct perf_sample_info *info)
{
        uint64_t head, tail;

        if (!sampler->base)
                return 0;
        head = head_of(sampler);
        tail = tail_of(sampler);
        /* Each record is at least a header: this bounds the loop. */
        for (uint64_t n = 0; n <= sampler->data_size / sizeof(struct perf_event_header); n++) {
                struct perf_event_header header;
                uint64_t lost[2];

                if (head == tail)
                        return 0;
                if (head - tail > sampler->data_size || head - tail < sizeof(header))
                        break;
                ring_copy(sampler, tail, &header, sizeof(header));
                if (header.size < sizeof(header) || header.size > head - tail)
                        break;
                if (header.type == PERF_RECORD_SAMPLE) {
                        begin_capture(capture, pid, tid);
                        enum sample_read r = read_sample(sampler, tail, header.size, capture, info);
                        if (r == SAMPLE_BAD)
                                break;
                        tail += header.size;
                        set_tail(sampler, tail);
                        if (r != SAMPLE_OK)
                                continue;
                        if (!sampler->period_ns)
                                info->period_ns = sampler->regular_ns;
                        else if (!end_first_period(sampler, &info->period_ns))
                                perf_sampler__close(sampler);
                        return 1;
                }
                if (header.type == PERF_RECORD_LOST && header.size >= sizeof(header) + 16) {
                        ring_copy(sampler, tail + sizeof(header), lost, sizeof(lost));
                        sampler->lost += lost[1];
                }
                tail += header.size;
                set_tail(sampler, tail);
        }
        sampler->invalid++;
        perf_sampler__discard(sampler);
        return -EBADMSG;
}
