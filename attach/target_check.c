/* target_check.c — see target_check.h.  Everything comes from
 * /proc/PID/{stat,status}, read as untrusted text. */
#include "attach/target_check.h"

#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"

#define PF_KTHREAD 0x00200000u

struct process_status {
        pid_t tgid;
        pid_t tracer;
        char state;
        char name[64];
};

static int read_status(pid_t pid, struct process_status *st)
{
        char path[64], line[256];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        memset(st, 0, sizeof(*st));
        st->tracer = -1;
        while (fgets(line, sizeof(line), f)) {
                int value;
                char c;
                if (sscanf(line, "Name: %63[^\n]", st->name) == 1)
                        continue;
                if (sscanf(line, "State: %c", &c) == 1)
                        st->state = c;
                else if (sscanf(line, "Tgid: %d", &value) == 1)
                        st->tgid = value;
                else if (sscanf(line, "TracerPid: %d", &value) == 1)
                        st->tracer = value;
        }
        return 0;
}

static unsigned long read_stat_flags(pid_t pid)
{
        char path[64], buf[1024];
        unsigned long flags = 0;
        const char *p;
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        if (!f || !fgets(buf, sizeof(buf), f))
                return 0;
        p = strrchr(buf, ')');
        /* After ") ": state ppid pgrp session tty_nr tpgid flags */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
                return 0;
        return flags;
}

pid_t target_check__tracer_of(pid_t pid)
{
        struct process_status st;

        if (read_status(pid, &st) < 0)
                return -1;
        return st.tracer;
}

bool target_check__is_zombie(pid_t tid)
{
        struct process_status st;

        return read_status(tid, &st) == 0 && (st.state == 'Z' || st.state == 'X');
}

/* A zombie leader whose threads run on (it called pthread_exit) is a live
 * process: its threads are profiled. */
static bool has_live_thread(pid_t pid)
{
        char path[64];
        struct dirent *entry;
        bool live = false;
        DIR *dir;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        dir = opendir(path);
        if (!dir)
                return false;
        while (!live && (entry = readdir(dir))) {
                pid_t tid = (pid_t)strtol(entry->d_name, NULL, 10);
                live = tid > 0 && tid != pid && !target_check__is_zombie(tid);
        }
        closedir(dir);
        return live;
}

static void tracer_name(pid_t tracer, char *name, size_t size)
{
        struct process_status st;

        if (read_status(tracer, &st) == 0)
                snprintf(name, size, "%s", st.name);
        else
                snprintf(name, size, "unknown");
}

enum target_check_result target_check(pid_t pid, char *why, size_t why_size)
{
        struct process_status st;
        char name[64];

        if (pid <= 0 || read_status(pid, &st) < 0) {
                snprintf(why, why_size, "PID %d: no such process", (int)pid);
                return TARGET_NO_SUCH_PROCESS;
        }
        if (pid == getpid() || st.tgid == getpid()) {
                snprintf(why, why_size, "PID %d is splunk-profd itself", (int)pid);
                return TARGET_SELF;
        }
        if (read_stat_flags(pid) & PF_KTHREAD) {
                snprintf(why, why_size, "PID %d (%s) is a kernel thread", (int)pid, st.name);
                return TARGET_KERNEL_THREAD;
        }
        if (st.tgid != pid) {
                snprintf(why, why_size, "PID %d is a thread of process %d; pass the process id",
                         (int)pid, (int)st.tgid);
                return TARGET_NOT_A_PROCESS;
        }
        if ((st.state == 'Z' || st.state == 'X') && !has_live_thread(pid)) {
                snprintf(why, why_size, "PID %d (%s) has exited (zombie)", (int)pid, st.name);
                return TARGET_ZOMBIE;
        }
        if (st.tracer > 0) {
                tracer_name(st.tracer, name, sizeof(name));
                snprintf(why, why_size, "PID %d (%s) is already traced by PID %d (%s)", (int)pid,
                         st.name, (int)st.tracer, name);
                return TARGET_ALREADY_TRACED;
        }
        return TARGET_OK;
}
