/* capture.c — the work done inside the stop window, and nothing else.
 *
 * For a stopped thread: PTRACE_GETREGS and one process_vm_readv() of the
 * stack from SP (less the red zone) upwards.  For a blocked thread: the
 * same copy, with SP and PC taken from /proc/.../syscall.  No allocation,
 * no file I/O beyond the one syscall each, no symbol work: those happen
 * after the resume.
 *
 * The copy is most of the stop window (process_vm_readv costs ~1 µs per
 * KiB on a 2-vCPU VM), so once a complete unwind has shown where the
 * thread's stack ends, copies stop there: a 100-frame Python stack needs
 * ~1.5 KiB of C stack, not --stack-bytes. */
#include "attach/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <time.h>

#include "attach/remote_memory.h"
#include "util/clock.h"

int capture__init(struct capture *capture, size_t stack_capacity)
{
        memset(capture, 0, sizeof(*capture));
        capture->stack_capacity = stack_capacity;
        return 0;
}

int capture__ready(struct capture *capture)
{
        struct capture_interp *interp = &capture->interp;

        if (!capture->stack && capture->stack_capacity) {
                capture->stack = malloc(capture->stack_capacity);
                if (!capture->stack)
                        return -ENOMEM;
        }
        if (interp->capacity < interp->reserved) {
                uint8_t *buffer = realloc(interp->buffer, interp->reserved);
                if (!buffer)
                        return -ENOMEM;
                interp->buffer = buffer;
                interp->capacity = interp->reserved;
        }
        return 0;
}

size_t capture__trim(struct capture *capture)
{
        struct capture_interp *interp = &capture->interp;
        size_t freed = 0;

        if (capture->stack) {
                free(capture->stack);
                capture->stack = NULL;
                capture->stack_len = 0;
                freed += capture->stack_capacity;
        }
        if (interp->buffer) {
                free(interp->buffer);
                interp->buffer = NULL;
                freed += interp->capacity;
                interp->capacity = interp->used = interp->n_regions = 0;
        }
        return freed;
}

void capture__release(struct capture *capture)
{
        free(capture->stack);
        capture->stack = NULL;
        capture->stack_capacity = 0;
        free(capture->interp.buffer);
        free(capture->interp.result);
        memset(&capture->interp, 0, sizeof(capture->interp));
}

void capture__reserve_interp(struct capture *capture, size_t capacity)
{
        if (capture->interp.reserved < capacity)
                capture->interp.reserved = capacity;
}

ssize_t capture__copy_interp(struct capture *capture, const uint64_t *addresses, const size_t *lens,
                             size_t n)
{
        struct capture_interp *interp = &capture->interp;
        struct iovec local[CAPTURE_INTERP_REGIONS], remote[CAPTURE_INTERP_REGIONS];
        size_t first = interp->n_regions, offset = interp->used, count = 0;
        ssize_t got;

        for (size_t i = 0; i < n && first + count < CAPTURE_INTERP_REGIONS; i++) {
                size_t len = lens[i];
                if (len > interp->capacity - offset)
                        len = interp->capacity - offset;
                if (len == 0)
                        break;
                local[count] = (struct iovec){.iov_base = interp->buffer + offset, .iov_len = len};
                remote[count] =
                    (struct iovec){.iov_base = (void *)(uintptr_t)addresses[i], .iov_len = len};
                interp->regions[first + count] =
                    (struct capture_region){.address = addresses[i], .offset = offset};
                offset += len;
                count++;
        }
        if (count == 0)
                return 0;
        got = process_vm_readv(capture->pid, local, count, remote, count, 0);
        if (got < 0)
                return -errno;
        /* A short read stops at the first range that faulted. */
        size_t left = (size_t)got;
        for (size_t i = 0; i < count && left > 0; i++) {
                struct capture_region *region = &interp->regions[first + i];
                region->len = left < local[i].iov_len ? left : local[i].iov_len;
                left -= region->len;
                interp->used = region->offset + region->len;
                interp->n_regions = first + i + 1;
        }
        return got;
}

const uint8_t *capture__interp_at(const struct capture *capture, uint64_t address, size_t len)
{
        const struct capture_interp *interp = &capture->interp;

        for (size_t i = 0; i < interp->n_regions; i++) {
                const struct capture_region *region = &interp->regions[i];
                if (address >= region->address && address - region->address <= region->len &&
                    region->len - (address - region->address) >= len)
                        return interp->buffer + region->offset + (address - region->address);
        }
        return NULL;
}

/* Bytes copied beyond the learned stack end: room for a walk that reads a
 * little higher than the one the hint came from. */
#define STACK_END_SLACK 256

static void copy_stack(struct capture *capture, uint64_t sp)
{
        uint64_t start = sp >= CAPTURE_RED_ZONE ? sp - CAPTURE_RED_ZONE : sp;
        size_t len = capture->stack_capacity;
        ssize_t n;

        capture->stack_cut_at_hint = false;
        if (!capture->stack) { /* capture__ready failed */
                capture->stack_start = start;
                capture->stack_len = 0;
                return;
        }
        if (capture->stack_end_hint > sp &&
            capture->stack_end_hint - start < len - STACK_END_SLACK) {
                len = (size_t)(capture->stack_end_hint - start) + STACK_END_SLACK;
                capture->stack_cut_at_hint = true;
        }
        n = remote_memory__read(capture->pid, start, capture->stack, len);
        if (n < 0 && start != sp) {
                /* The red zone is on an unmapped page: start at SP. */
                start = sp;
                n = remote_memory__read(capture->pid, start, capture->stack, len);
        }
        capture->stack_start = start;
        capture->stack_len = n > 0 ? (size_t)n : 0;
}

void capture__learn_stack_end(struct capture *capture, uint64_t read_end)
{
        if (read_end > capture->stack_start && read_end > capture->stack_end_hint)
                capture->stack_end_hint = read_end;
}

void capture__forget_stack_end(struct capture *capture)
{
        capture->stack_end_hint = 0;
}

int capture__grow_stack(struct capture *capture, size_t stack_capacity)
{
        uint8_t *grown;

        if (stack_capacity <= capture->stack_capacity)
                return 0;
        if (!capture->stack) { /* allocated at this size by capture__ready */
                capture->stack_capacity = stack_capacity;
                return 0;
        }
        grown = realloc(capture->stack, stack_capacity);
        if (!grown)
                return -ENOMEM;
        capture->stack = grown;
        capture->stack_capacity = stack_capacity;
        return 0;
}

void capture__warm_up(const struct capture *capture)
{
        uint64_t word;

        if (capture->stack_start)
                (void)remote_memory__read(capture->pid, capture->stack_start, &word, sizeof(word));
}

void capture__begin_stopped(struct capture *capture, pid_t pid, pid_t tid)
{
        capture->pid = pid;
        capture->tid = tid;
        capture->kind = CAPTURE_STOPPED;
        capture->interp.n_regions = capture->interp.used = 0;
        capture->span_slot_len = 0;
        capture->thread_record_state = 0;
        capture->time_ns = realtime_ns();
}

int capture__copy_registers_and_stack(struct capture *capture)
{
        if (ptrace(PTRACE_GETREGS, capture->tid, NULL, &capture->regs) < 0)
                return -errno;
        capture->bp_known = true;
        copy_stack(capture, capture->regs.rsp);
        return 0;
}

int capture__from_blocked(struct capture *capture, pid_t pid, pid_t tid,
                          const struct blocked_point *point)
{
        capture->pid = pid;
        capture->tid = tid;
        capture->kind = CAPTURE_BLOCKED;
        capture->interp.n_regions = capture->interp.used = 0;
        capture->span_slot_len = 0;
        capture->thread_record_state = 0;
        capture->time_ns = realtime_ns();
        memset(&capture->regs, 0, sizeof(capture->regs));
        capture->regs.rsp = point->sp;
        capture->regs.rip = point->pc;
        capture->bp_known = false;
        capture->blocked = *point;
        copy_stack(capture, point->sp);
        return capture->stack_len > 0 ? 0 : -EFAULT;
}

int capture__copy_span_slots(struct capture *capture, uint64_t address, size_t len)
{
        if (len > sizeof(capture->span_slot))
                len = sizeof(capture->span_slot);
        struct iovec local = {.iov_base = capture->span_slot, .iov_len = len};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)address, .iov_len = len};
        ssize_t got = process_vm_readv(capture->pid, &local, 1, &remote, 1, 0);

        if (got < 0)
                return -errno;
        capture->span_slot_len = got == (ssize_t)len ? len : 0;
        return 0;
}

bool capture__read_word(const struct capture *capture, uint64_t address, uint64_t *value)
{
        uint64_t offset;

        if (address < capture->stack_start)
                return false;
        offset = address - capture->stack_start;
        if (offset > capture->stack_len || capture->stack_len - offset < sizeof(*value))
                return false;
        memcpy(value, capture->stack + offset, sizeof(*value));
        return true;
}
