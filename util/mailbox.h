/* mailbox.h — a one-way channel of fixed-size messages between two
 * threads, for state that one thread owns and another shows: the tracer's
 * counters on the progress line and in `top`, the exporter's counters in
 * the health line.  The receiver keeps only the newest message.
 *
 * Why a pipe and not shared memory: the reader never sees a half-written
 * snapshot (a write of at most PIPE_BUF bytes is atomic), no lock is held
 * by the sender, and the receiver can poll() the read end.  The sender
 * never blocks: when the pipe is full (the receiver is slow or gone), the
 * message is dropped; the next one supersedes it anyway. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define MAILBOX_MAX_MESSAGE 4096 /* PIPE_BUF: writes up to this size are atomic */

struct mailbox {
        int read_fd, write_fd; /* -1 before init and after release */
        size_t size;           /* every message's size */
};

/* 0 or -errno.  `size` must be at most MAILBOX_MAX_MESSAGE. */
int mailbox__init(struct mailbox *mailbox, size_t size);
/* Closes both ends; accepts a mailbox that was never initialised if it
 * was zeroed with MAILBOX_INIT, and one released already. */
void mailbox__release(struct mailbox *mailbox);
#define MAILBOX_INIT                                                                               \
        {                                                                                          \
                .read_fd = -1, .write_fd = -1                                                      \
        }

/* Sender side: copies `size` bytes in, never blocks; false when dropped. */
bool mailbox__send(struct mailbox *mailbox, const void *message);
/* Receiver side: reads every waiting message into `message`, so that it
 * holds the newest; false (and `message` untouched) when none waited. */
bool mailbox__receive(struct mailbox *mailbox, void *message);
/* The descriptor that polls readable while a message waits. */
int mailbox__fd(const struct mailbox *mailbox);
