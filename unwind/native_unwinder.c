/* native_unwinder.c — see native_unwinder.h.
 *
 * Registers follow the DWARF numbering of the x86-64 psABI: rax, rdx, rcx,
 * rbx, rsi, rdi, rbp, rsp, r8..r15, then the return address column.
 *
 * A thread sampled while blocked in a syscall gives only SP and PC (from
 * /proc/.../syscall).  That is enough wherever the CFA is SP-based, which
 * is the case for libc's syscall wrappers and for code built without frame
 * pointers.  Code built with frame pointers computes its CFA from RBP; for
 * it the unwinder recovers RBP from the copy: the innermost frame record
 * above SP (a word pointing higher up the stack, followed by a return
 * address into mapped code, whose chain holds for two links).
 *
 * libdwfl ends a walk quietly, as if at the outermost frame, when a
 * register it needs is unknown.  So for a blocked capture the walk is done
 * both without and with the recovered RBP and the deeper result is kept;
 * a result of fewer than MIN_BLOCKED_FRAMES frames (a syscall wrapper and
 * one caller: no real thread stack is that short) is reported as
 * UNWIND_NEEDS_REGISTERS so the sampler may stop the thread instead.
 *
 * A walk ends, marked truncated and UNWIND_NEEDS_REGISTERS, at the first
 * frame whose stack pointer is not above its callee's: every caller's SP
 * is its callee's CFA, so that frame came from a wrong register value and
 * the walk would go round in circles.  When that happens with the
 * recovered RBP, the record was no real one and that walk is dropped.
 *
 * Each frame's stack pointer is recorded too (0 when
 * libdwfl cannot tell): frame i's locals lie in [sps[i], sps[i + 1]), which
 * is how the Python merge finds the interpreter-loop activations whose
 * entry objects live on the C stack (unwind/stack_merge.c). */
#include "unwind/native_unwinder.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolizer.h"

#define DWARF_REG_RBP      6
#define DWARF_REG_RSP      7
#define DWARF_REGS_GPR     17
#define FRAME_RECORD_LINKS 2
#define MIN_BLOCKED_FRAMES 3
/* How far above a stack copy a failed read still means "copy too short":
 * the largest copy a thread can grow to (4 x the 1 MiB --stack-bytes cap). */
#define BEYOND_COPY_REACH (4ull << 20)

struct native_unwinder {
        struct address_space *space;
        const struct capture *current;
        bool use_recovered_bp;
        uint64_t recovered_bp;
        struct thread_stack *out;
        size_t max_depth;
        uint64_t last_sp;            /* the previous frame's stack pointer, 0: unknown */
        bool looped;                 /* the stack pointer stopped growing: walk ended */
        bool read_beyond_copy;       /* a read above the copy's end: cut short */
        bool read_bad_address;       /* a read below the copy or far away */
        struct thread_stack scratch; /* the second walk of a blocked capture */
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
        /* Threads are only ever asked for by id, through get_thread. */
        return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
        struct native_unwinder *unwinder = dwfl_arg;

        if (!unwinder->current || unwinder->current->tid != tid)
                return false;
        *thread_argp = unwinder;
        return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr address, Dwarf_Word *result, void *dwfl_arg)
{
        struct native_unwinder *unwinder = dwfl_arg;
        uint64_t value;

        const struct capture *capture = unwinder->current;
        uint64_t copy_end = capture->stack_start + capture->stack_len;

        if (!capture__read_word(capture, address, &value)) {
                /* Above the copy (within any stack's reach): the copy was
                 * too short.  Elsewhere (below SP's red zone, a heap
                 * address from a bad CFA): a broken walk, which a longer
                 * copy would not mend. */
                if (address >= copy_end && address - copy_end < BEYOND_COPY_REACH)
                        unwinder->read_beyond_copy = true;
                else
                        unwinder->read_bad_address = true;
                return false;
        }
        if (address + sizeof(value) > unwinder->out->read_end)
                unwinder->out->read_end = address + sizeof(value);
        *result = value;
        return true;
}

static bool set_stopped_registers(Dwfl_Thread *thread, const struct user_regs_struct *r)
{
        Dwarf_Word regs[DWARF_REGS_GPR] = {
            r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp, r->r8,
            r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip,
        };

        return dwfl_thread_state_registers(thread, 0, DWARF_REGS_GPR, regs);
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
        struct native_unwinder *unwinder = thread_arg;
        const struct capture *capture = unwinder->current;
        Dwarf_Word sp = capture->regs.rsp, bp = unwinder->recovered_bp;

        dwfl_thread_state_register_pc(thread, capture->regs.rip);
        if (capture->kind != CAPTURE_BLOCKED) /* stopped or perf: all of them */
                return set_stopped_registers(thread, &capture->regs);
        if (!dwfl_thread_state_registers(thread, DWARF_REG_RSP, 1, &sp))
                return false;
        if (unwinder->use_recovered_bp)
                return dwfl_thread_state_registers(thread, DWARF_REG_RBP, 1, &bp);
        return true;
}

static void thread_detach(Dwfl_Thread *thread, void *thread_arg)
{
}

static void detach(Dwfl *dwfl, void *dwfl_arg)
{
}

static const Dwfl_Thread_Callbacks callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
    .detach = detach,
    .thread_detach = thread_detach,
};

struct native_unwinder *native_unwinder__new(struct address_space *space, pid_t pid)
{
        struct native_unwinder *unwinder = calloc(1, sizeof(*unwinder));

        if (!unwinder)
                return NULL;
        unwinder->space = space;
        if (!dwfl_attach_state(address_space__dwfl(space), NULL, pid, &callbacks, unwinder)) {
                free(unwinder);
                return NULL;
        }
        return unwinder;
}

void native_unwinder__free(struct native_unwinder *unwinder)
{
        /* The Dwfl (and its attached state) belongs to the address space. */
        if (unwinder) {
                free(unwinder->scratch.pcs);
                free(unwinder->scratch.sps);
        }
        free(unwinder);
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
        struct native_unwinder *unwinder = arg;
        struct thread_stack *out = unwinder->out;
        Dwarf_Addr pc;
        Dwarf_Word sp;
        bool activation;

        if (!dwfl_frame_pc(state, &pc, &activation))
                return DWARF_CB_ABORT;
        if (out->n_pcs >= unwinder->max_depth) {
                out->truncated = true;
                out->end = UNWIND_DEPTH_LIMIT;
                return DWARF_CB_ABORT;
        }
        if (!thread_stack__reserve(out, out->n_pcs + 1)) {
                out->truncated = true;
                return DWARF_CB_ABORT;
        }
        if (dwfl_frame_reg(state, DWARF_REG_RSP, &sp) != 0)
                sp = 0;
        /* A caller's stack pointer is its callee's CFA, always above the
         * callee's: one that is not came from a wrong register (a stale
         * frame record taken for RBP, corrupted memory) and the walk would
         * repeat itself until max_depth.  The frame is dropped and the walk
         * ends, marked as lacking a true register value. */
        if (sp && unwinder->last_sp && sp <= unwinder->last_sp) {
                unwinder->looped = true;
                out->truncated = true;
                out->end = UNWIND_NEEDS_REGISTERS;
                return DWARF_CB_ABORT;
        }
        if (sp)
                unwinder->last_sp = sp;
        out->sps[out->n_pcs] = sp;
        out->pcs[out->n_pcs++] = activation || pc == 0 ? pc : pc - 1;
        return DWARF_CB_OK;
}

static size_t walk(struct native_unwinder *unwinder)
{
        struct thread_stack *out = unwinder->out;
        int r;

        out->n_pcs = 0;
        out->truncated = false;
        out->end = UNWIND_COMPLETE;
        out->read_end = 0;
        unwinder->last_sp = 0;
        unwinder->looped = false;
        unwinder->read_beyond_copy = unwinder->read_bad_address = false;
        r = dwfl_getthread_frames(address_space__dwfl(unwinder->space), unwinder->current->tid,
                                  on_frame, unwinder);
        /* libdwfl may end quietly (r == 0) when a read fails, so a read
         * beyond the copy marks the stack cut short either way. */
        if (unwinder->read_beyond_copy && out->end == UNWIND_COMPLETE) {
                out->truncated = true;
                out->end = UNWIND_OUT_OF_COPY;
        } else if (r != 0 && out->end == UNWIND_COMPLETE) {
                out->truncated = true;
                out->end = UNWIND_NEEDS_REGISTERS;
        } else if (unwinder->read_bad_address) {
                out->truncated = true;
        }
        return out->n_pcs;
}

static bool is_code_address(struct native_unwinder *unwinder, uint64_t address)
{
        return address_space__mapping_at(unwinder->space, address) != NULL;
}

/* Whether `record` looks like a frame record that chains upwards. */
static bool is_frame_record(struct native_unwinder *unwinder, uint64_t record, int links)
{
        uint64_t saved_bp, return_address;

        if (!capture__read_word(unwinder->current, record, &saved_bp) ||
            !capture__read_word(unwinder->current, record + 8, &return_address) ||
            !is_code_address(unwinder, return_address))
                return false;
        if (links <= 1 || saved_bp == 0)
                return true;
        return saved_bp > record && is_frame_record(unwinder, saved_bp, links - 1);
}

/* The innermost frame record at or above `from`. */
static bool recover_bp(struct native_unwinder *unwinder, uint64_t from, uint64_t *bp)
{
        const struct capture *capture = unwinder->current;
        uint64_t end = capture->stack_start + capture->stack_len, address;

        /* Not in the red zone: below SP a record is stale. */
        if (from < capture->regs.rsp)
                from = capture->regs.rsp;
        if (from < capture->stack_start)
                from = capture->stack_start;
        address = (from + 7) & ~7ull;

        for (; address + 16 <= end; address += 8) {
                if (is_frame_record(unwinder, address, FRAME_RECORD_LINKS)) {
                        *bp = address;
                        return true;
                }
        }
        return false;
}

/* Walks again with a recovered RBP into scratch; keeps it if deeper.
 * The record is searched from the stack pointer of the first walk's last
 * frame, the one whose CFA needs RBP: the words between SP and there are
 * the frames (and red zones) of SP-based code, where the remains of
 * earlier calls look like frame records (CPython 3.15's time.sleep: a
 * stale record under libc's clock_nanosleep sent the walk back into it). */
static void walk_with_recovered_bp(struct native_unwinder *unwinder, struct thread_stack *out)
{
        struct thread_stack *scratch = &unwinder->scratch;
        uint64_t from = out->n_pcs && out->sps ? out->sps[out->n_pcs - 1] : 0;

        if (!recover_bp(unwinder, from, &unwinder->recovered_bp))
                return;
        unwinder->use_recovered_bp = true;
        unwinder->out = scratch;
        walk(unwinder);
        unwinder->out = out;
        if (scratch->read_end > out->read_end)
                out->read_end = scratch->read_end; /* what the copy must hold */
        if (unwinder->looped) {
                /* The record was no frame record, so none of the frames
                 * found with it can be trusted: the first walk stays,
                 * marked so that the sampler stops the thread for its
                 * real registers. */
                out->truncated = true;
                out->end = UNWIND_NEEDS_REGISTERS;
                return;
        }
        if (scratch->n_pcs <= out->n_pcs || !thread_stack__reserve(out, scratch->n_pcs))
                return;
        memcpy(out->pcs, scratch->pcs, scratch->n_pcs * sizeof(*out->pcs));
        memcpy(out->sps, scratch->sps, scratch->n_pcs * sizeof(*out->sps));
        out->n_pcs = scratch->n_pcs;
        out->truncated = scratch->truncated;
        out->end = scratch->end;
}

size_t native_unwinder__unwind(struct native_unwinder *unwinder, const struct capture *capture,
                               struct thread_stack *out, size_t max_depth)
{
        unwinder->current = capture;
        unwinder->out = out;
        unwinder->max_depth = max_depth;
        unwinder->use_recovered_bp = false;
        walk(unwinder);
        if (capture->kind == CAPTURE_BLOCKED) {
                walk_with_recovered_bp(unwinder, out);
                if (out->end == UNWIND_COMPLETE && out->n_pcs < MIN_BLOCKED_FRAMES) {
                        out->truncated = true;
                        out->end = UNWIND_NEEDS_REGISTERS;
                }
        }
        unwinder->current = NULL;
        return out->n_pcs;
}
