/* discovery.h — finds the processes `--watch` should look at.
 *
 * Two sources, one table.  The netlink process connector (when the kernel
 * and our capabilities allow it) reports every fork, exec and exit as it
 * happens; new processes and execs are queued and examined on the next
 * pass, exits forget the pid at once.  A scan of /proc runs every 200 ms
 * without the connector (so a new process is seen within 1 s either way),
 * and every 2 s with it as a safety net for lost netlink messages.
 *
 * The table remembers, per live pid, what the last examination decided,
 * so a pass only examines new pids; rejected ones are re-examined every
 * RECHECK (10 s), which catches a span segment created after start and,
 * without the connector, an exec.  A process already traced by someone
 * else is reported once by the caller (the entry remembers it). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/watch_rules.h"

enum seen_state {
        SEEN_REJECTED,     /* not labelled, denied, kernel thread, ... */
        SEEN_TRACED_OTHER, /* another tracer holds it (logged once) */
        SEEN_TARGET,       /* profiled (or being released) */
        SEEN_LOOKING,      /* its facts are being read off the tracer (facts_reader.h) */
};

struct seen_entry {
        pid_t pid;
        uint8_t state;
        uint64_t examined_ns;
};

struct discovery {
        int netlink_fd; /* -1: the connector is unavailable */
        size_t n_seen, seen_capacity;
        struct seen_entry *seen; /* sorted by pid */
        size_t n_pending, pending_capacity;
        pid_t *pending; /* from netlink fork/exec, examined on the next pass */
        uint64_t next_scan_ns;
        uint64_t scans, examined;
};

/* Examines `pid` (previous state `previous`, or -1 when new); returns the
 * new state. */
typedef enum seen_state (*discovery_examine_fn)(void *arg, pid_t pid, int previous);

void discovery__init(struct discovery *discovery);
void discovery__release(struct discovery *discovery);
/* Reads every queued connector message. */
void discovery__read_netlink(struct discovery *discovery);
/* Examines pending pids, and scans /proc when due. */
void discovery__pass(struct discovery *discovery, uint64_t now_ns, discovery_examine_fn examine,
                     void *arg);
/* Records a state decided elsewhere (fork followed, released at exec). */
void discovery__set(struct discovery *discovery, pid_t pid, enum seen_state state, uint64_t now_ns);

/* Reads what the rules need: uid, exe, cgroup/unit, environment (first
 * 64 KiB).  0 or -errno. */
int proc_facts__read(pid_t pid, struct proc_facts *facts);
/* The same without the environment (the caller has it from the maps
 * reader): the reads that wait on no lock of the process. */
int proc_facts__read_but_environ(pid_t pid, struct proc_facts *facts);
void proc_facts__release(struct proc_facts *facts);
/* The span-context segment is mapped. */
bool proc_facts__has_segment(pid_t pid);
/* The same from a maps text read elsewhere (`len` bytes, NULL: no). */
bool proc_facts__maps_have_segment(const char *text, size_t len);
