/* thread_tcb.h — every thread's fs_base (its glibc TCB, struct pthread)
 * read from glibc's own thread lists, without stopping any thread.
 *
 * x86-64 glibc >= 2.34 keeps each thread's struct pthread on circular
 * doubly linked lists whose heads are in ld.so's `_rtld_global` (the
 * exported .dynsym object): `_dl_stack_used` (threads on stacks glibc
 * allocated), `_dl_stack_user` (the main thread, user stacks) and the
 * stack cache.  A node's address is TCB + the link's offset; the TCB
 * points to itself at +0 and +16 (tcbhead_t.tcb, .self) and holds the
 * thread's kernel tid just after the link (nptl/descr.h: list, then tid).
 * Nothing needs debug info: the link's offset is found by content from
 * the first node of a list that starts in `_rtld_global`.
 *
 * Everything read is untrusted: every read and loop is bounded, every node
 * is validated (self pointers, the previous node's link, a positive tid),
 * and a list that fails any check contributes nothing.  Older glibc (lists
 * in libpthread) and musl simply yield no entries: the caller then falls
 * back to a stop. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define THREAD_TCB_RTLD_MAX  (64u * 1024) /* of _rtld_global scanned */
#define THREAD_TCB_LINK_MAX  1024u        /* link offset searched in a TCB */
#define THREAD_TCB_NODES_MAX 16384u       /* nodes walked per call, all lists */

struct thread_tcb_entry {
        pid_t tid; /* in the target's PID namespace */
        uint64_t tcb;
};

/* Outside the stop window: walks the lists headed in [rtld, rtld + size)
 * of process `mem_pid` and fills up to `max` entries (tid > 0 only).
 * Returns how many, 0 when nothing trustworthy was found, or -errno. */
int thread_tcb__walk(pid_t mem_pid, uint64_t rtld, uint64_t size, struct thread_tcb_entry *out,
                     size_t max);
