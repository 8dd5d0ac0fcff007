/* thread_tcb.c — see thread_tcb.h.
 *
 * The scan: every 8-aligned pair (next, prev) in _rtld_global whose next
 * points outside it (an empty list points to its own head) and whose
 * first node points back to the head is a list head candidate.  The first
 * candidate whose node - L holds its own address at +0 and +16 gives the
 * link's offset L; every candidate is then walked with it.  A walk reads
 * one TCB prefix (L + 20 bytes) per node and keeps the list only when every
 * node passes: TCB self pointers, prev = the node before, and the walk
 * gets back to the head within the node budget (so a cycle that avoids
 * the head, or a node freed under us, discards the list). */
#include "context/thread_tcb.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "util/cleanup.h"

#define TCB_SELF_BYTES 24 /* tcbhead_t: tcb @0, dtv @8, self @16 */

static bool read_exact(pid_t pid, uint64_t at, void *buffer, size_t len)
{
        return remote_memory__read(pid, at, buffer, len) == (ssize_t)len;
}

/* The link's offset in a TCB, from `node`, the first node of the list
 * headed at `head`; 0 when `node` is not in a TCB. */
static uint64_t find_link_offset(pid_t pid, uint64_t head, uint64_t node)
{
        uint64_t words[(THREAD_TCB_LINK_MAX + 16) / 8];
        const size_t at_node = THREAD_TCB_LINK_MAX / 8;

        if (node < THREAD_TCB_LINK_MAX || !read_exact(pid, node, words + at_node, 16) ||
            words[at_node + 1] != head)
                return 0;
        /* A TCB at the start of a mapping: from the node's page on only. */
        uint64_t from = node - THREAD_TCB_LINK_MAX, page = node & ~4095ull;
        if (!read_exact(pid, from, words, sizeof(words)) &&
            (page <= from || !read_exact(pid, page, words + (page - from) / 8, node + 16 - page)))
                return 0;
        uint64_t most = page > from ? node - page : THREAD_TCB_LINK_MAX;
        for (uint64_t link = TCB_SELF_BYTES; link <= most; link += 8) {
                size_t tcb = at_node - link / 8;
                if (words[tcb] == node - link && words[tcb + 2] == node - link)
                        return link;
        }
        return 0;
}

/* Appends the threads of the list headed at `head` to out[n..max); returns
 * the new count, or `n` when the list fails any check.  `first` and
 * `last`: the head's next and prev. */
static size_t walk_list(pid_t pid, uint64_t head, uint64_t first, uint64_t last, uint64_t link,
                        struct thread_tcb_entry *out, size_t n, size_t max, size_t *budget)
{
        uint8_t prefix[THREAD_TCB_LINK_MAX + 20];
        uint64_t prev = head, node = first;
        size_t at = n;

        while (node != head) {
                uint64_t self[3], next, back, tcb = node - link;
                int32_t tid;
                if (*budget == 0 || node < link || (node & 7) ||
                    !read_exact(pid, tcb, prefix, link + 20))
                        return n;
                (*budget)--;
                memcpy(self, prefix, sizeof(self));
                memcpy(&next, prefix + link, 8);
                memcpy(&back, prefix + link + 8, 8);
                memcpy(&tid, prefix + link + 16, 4);
                if (self[0] != tcb || self[2] != tcb || back != prev)
                        return n;
                if (tid > 0) { /* 0: an exited thread's cached stack */
                        if (at == max)
                                return n;
                        out[at++] = (struct thread_tcb_entry){tid, tcb};
                }
                prev = node;
                node = next;
        }
        return prev == last ? at : n; /* the head's prev closes the cycle */
}

int thread_tcb__walk(pid_t mem_pid, uint64_t rtld, uint64_t size, struct thread_tcb_entry *out,
                     size_t max)
{
        uint64_t len = (size < THREAD_TCB_RTLD_MAX ? size : THREAD_TCB_RTLD_MAX) & ~7ull;
        uint64_t link = 0;
        size_t n = 0, budget = THREAD_TCB_NODES_MAX;

        if (len < 16 || (rtld & 7) || rtld + len < rtld)
                return 0;
        _cleanup_free_ uint64_t *words = malloc(len);
        if (!words)
                return -ENOMEM;
        if (!read_exact(mem_pid, rtld, words, len))
                return -EIO;
        for (size_t i = 0; i + 1 < len / 8; i++) {
                uint64_t head = rtld + i * 8, next = words[i], prev = words[i + 1];
                if (!next || !prev || ((next | prev) & 7) || (next >= rtld && next < rtld + len) ||
                    (prev >= rtld && prev < rtld + len))
                        continue;
                if (!link)
                        link = find_link_offset(mem_pid, head, next);
                if (link)
                        n = walk_list(mem_pid, head, next, prev, link, out, n, max, &budget);
        }
        return (int)n;
}
