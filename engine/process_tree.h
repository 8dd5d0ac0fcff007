/* process_tree.h — processes found by walking /proc: by name (--name) and
 * by parentage (--subprocesses includes the children that exist at the
 * start).  Everything read is untrusted text; every walk is bounded. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

struct process_match {
        pid_t pid;
        char comm[16];
};

/* Every process whose comm or executable's base name matches the
 * fnmatch(3) glob `pattern`, except kernel threads, zombies and any
 * splunk-profd (this one; another instance: the same executable, or one
 * named splunk-profd).  The
 * first `max` matches, by pid, go into `out`; returns how many matched
 * (possibly more than `max`) or -errno. */
int process_tree__match_name(const char *pattern, struct process_match *out, size_t max);

/* The descendants of `root` right now (children, grandchildren, ...),
 * parents before their children; up to `max` into `out`.  Returns how
 * many were stored, or -errno. */
int process_tree__descendants(pid_t root, pid_t *out, size_t max);
