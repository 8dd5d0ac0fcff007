/* process_tree.c — see process_tree.h.
 *
 * One pass over /proc reads each process's stat line (comm, state, parent,
 * flags); --name also reads the executable link.  A process can exit
 * between the listing and the read: it is skipped. */
#include "engine/process_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/array.h"
#include "util/cleanup.h"

#define PF_KTHREAD 0x00200000u
#define PROFD_NAME "splunk-profd"
/* pid_max is at most 2^22: no walk needs more entries than that. */
#define MAX_PROCESSES (1u << 22)

struct proc_entry {
        pid_t pid, ppid;
        char state;
        unsigned long flags;
        char comm[16];
};

/* /proc/PID/stat: comm is between the first '(' and the last ')' (it may
 * hold either), then "state ppid pgrp session tty_nr tpgid flags". */
static bool read_entry(pid_t pid, struct proc_entry *entry)
{
        char path[64], buf[1024];
        _cleanup_fclose_ FILE *f = NULL;
        const char *open, *close;
        size_t len;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        if (!f || !fgets(buf, sizeof(buf), f))
                return false;
        open = strchr(buf, '(');
        close = strrchr(buf, ')');
        if (!open || !close || close < open)
                return false;
        len = (size_t)(close - open - 1);
        if (len >= sizeof(entry->comm))
                len = sizeof(entry->comm) - 1;
        memcpy(entry->comm, open + 1, len);
        entry->comm[len] = '\0';
        entry->pid = pid;
        return sscanf(close + 1, " %c %d %*d %*d %*d %*d %lu", &entry->state, &entry->ppid,
                      &entry->flags) == 3;
}

/* Calls `fn` for every process of /proc; stops at a negative return. */
static int each_process(int (*fn)(void *arg, const struct proc_entry *entry), void *arg)
{
        _cleanup_(closedirp) DIR *dir = opendir("/proc");
        struct dirent *d;
        size_t seen = 0;

        if (!dir)
                return -errno;
        while ((d = readdir(dir)) && seen++ < MAX_PROCESSES) {
                char *end;
                long pid = strtol(d->d_name, &end, 10);
                struct proc_entry entry;
                int r;
                if (*end || pid <= 0 || !read_entry((pid_t)pid, &entry))
                        continue;
                if ((r = fn(arg, &entry)) < 0)
                        return r;
        }
        return 0;
}

/* The executable's path ("" when unreadable), without " (deleted)". */
static void read_exe(pid_t pid, char *out, size_t size)
{
        char path[64];
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        n = readlink(path, out, size - 1);
        out[n > 0 ? n : 0] = '\0';
        if (n > 10 && strcmp(out + n - 10, " (deleted)") == 0)
                out[n - 10] = '\0';
}

struct name_walk {
        const char *pattern;
        char self_exe[4096];
        struct process_match *out;
        size_t max, n;
};

static int match_one(void *arg, const struct proc_entry *entry)
{
        struct name_walk *walk = arg;
        char exe[4096];
        const char *base;

        if (entry->pid == getpid() || (entry->flags & PF_KTHREAD) || entry->state == 'Z' ||
            entry->state == 'X')
                return 0;
        read_exe(entry->pid, exe, sizeof(exe));
        if (exe[0] && walk->self_exe[0] && strcmp(exe, walk->self_exe) == 0)
                return 0; /* another splunk-profd, or a child not yet exec'd */
        base = strrchr(exe, '/');
        base = base ? base + 1 : exe;
        if (strcmp(base, PROFD_NAME) == 0 || strcmp(entry->comm, PROFD_NAME) == 0)
                return 0; /* an instance built elsewhere */
        if (fnmatch(walk->pattern, entry->comm, 0) != 0 &&
            (!*base || fnmatch(walk->pattern, base, 0) != 0))
                return 0;
        if (walk->n < walk->max) {
                walk->out[walk->n].pid = entry->pid;
                snprintf(walk->out[walk->n].comm, sizeof(walk->out[walk->n].comm), "%s",
                         entry->comm);
        }
        walk->n++;
        return 0;
}

static int compare_matches(const void *a, const void *b)
{
        pid_t x = ((const struct process_match *)a)->pid,
              y = ((const struct process_match *)b)->pid;

        return (x > y) - (x < y);
}

int process_tree__match_name(const char *pattern, struct process_match *out, size_t max)
{
        struct name_walk walk = {.pattern = pattern, .out = out, .max = max};
        int r;

        read_exe(getpid(), walk.self_exe, sizeof(walk.self_exe));
        if ((r = each_process(match_one, &walk)) < 0)
                return r;
        qsort(out, walk.n < max ? walk.n : max, sizeof(*out), compare_matches);
        return walk.n > (size_t)INT32_MAX ? INT32_MAX : (int)walk.n;
}

struct parent_walk {
        struct proc_entry *entries;
        size_t n, capacity;
};

static int collect(void *arg, const struct proc_entry *entry)
{
        struct parent_walk *walk = arg;

        if (entry->state == 'Z' || entry->state == 'X')
                return 0;
        if (ARRAY_RESERVE(walk->entries, walk->capacity, walk->n + 1) < 0)
                return -ENOMEM;
        walk->entries[walk->n++] = *entry;
        return 0;
}

int process_tree__descendants(pid_t root, pid_t *out, size_t max)
{
        struct parent_walk walk = {0};
        _cleanup_free_ struct proc_entry *entries = NULL;
        size_t n = 0;
        int r = each_process(collect, &walk);

        entries = walk.entries;
        if (r < 0)
                return r;
        /* Breadth first: each child is appended after its parent, so the
         * list is its own queue (step k expands out[k - 1], step 0 root).
         * A snapshot of the tree has no cycles; `max` bounds it anyway. */
        for (size_t step = 0; n < max; step++) {
                pid_t parent = step == 0 ? root : out[step - 1];
                for (size_t i = 0; i < walk.n && n < max; i++)
                        if (entries[i].ppid == parent && entries[i].pid != root &&
                            entries[i].pid != parent)
                                out[n++] = entries[i].pid;
                if (step == n)
                        break;
        }
        return (int)n;
}
