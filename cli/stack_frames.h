/* stack_frames.h — one sample's stack as printable frames, for `dump` and
 * `top`, which show stacks as they are taken instead of through a profile.
 *
 * A sample holds either native lookup addresses (C targets) or a merged
 * stack (Python targets: Python frames carry their own function, file and
 * line; native ones an address).  Each native address is symbolized through
 * the target's address space and expands into its inline chain, innermost
 * first, exactly as the pprof Location's Lines do, so dump, top and the
 * profile show the same frames. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sample_event;

struct stack_frame {
        const char *function; /* never NULL; "0x..." when unknown */
        const char *file;     /* "" when unknown */
        int64_t line;         /* <= 0 when unknown */
        uint64_t pc;          /* native: lookup address; Python: 0 */
        const char *module;   /* native: mapped file path, "" if none */
        bool python;
        bool inlined; /* native: inlined into the next (outer) frame */
};

/* Called for each frame, leaf first.  `frame` and its strings live only
 * for the call.  Return false to stop early. */
typedef bool (*stack_frame_fn)(void *arg, const struct stack_frame *frame);

/* Walks the event's stack; returns the number of frames visited. */
size_t stack_frames__walk(const struct sample_event *event, stack_frame_fn fn, void *arg);

/* True when the event's stack is known to be incomplete. */
bool stack_frames__truncated(const struct sample_event *event);
