/* watch_rules.h — which processes `--watch` profiles.
 *
 * A process is profiled when no deny rule matches it and it is labelled:
 * SPLUNK_PROFILER_ENABLED=true in its environment, a span-context segment
 * (memfd "splunk-profd-ctx") in its mappings, or an allow rule matches.
 *
 * A rule is KIND:PATTERN, optionally negated with a leading '!':
 *   exe:GLOB      the executable's path (/proc/PID/exe), fnmatch(3)
 *   uid:N         the real user id
 *   unit:GLOB     the systemd unit, from the cgroup path (e.g. web.service)
 *   cgroup:GLOB   the cgroup v2 path (e.g. /system.slice/web.service)
 *   env:K=V       the environment holds exactly K=V
 * Lists are comma-separated (SPLUNK_PROFILER_WATCH_ALLOW/_DENY) or given
 * one per flag (--allow, --deny; the flags replace the variable's list).
 * Example: --deny '!unit:web.service' profiles nothing outside that unit. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define WATCH_MAX_RULES   32
#define WATCH_PATTERN_MAX 256

enum watch_rule_kind { RULE_EXE, RULE_UID, RULE_UNIT, RULE_CGROUP, RULE_ENV };

struct watch_rule {
        enum watch_rule_kind kind;
        bool negated;
        char pattern[WATCH_PATTERN_MAX];
};

struct watch_rule_list {
        size_t n;
        struct watch_rule rules[WATCH_MAX_RULES];
};

struct watch_rules {
        struct watch_rule_list allow, deny;
};

/* What discovery knows about a process (engine/discovery.h). */
struct proc_facts {
        pid_t pid;
        uid_t uid;
        char exe[4096];
        char cgroup[1024];
        char unit[256];
        char *environ; /* NUL-separated, bounded; owned */
        size_t environ_len;
};

/* Adds the comma-separated rules in `text`.  false with `error` set. */
bool watch_rule_list__add(struct watch_rule_list *list, const char *text, const char *what,
                          char *error, size_t error_size);
bool watch_rule_list__matches(const struct watch_rule_list *list, const struct proc_facts *facts);

/* The environment holds NAME=VALUE exactly. */
bool proc_facts__has_env(const struct proc_facts *facts, const char *entry);
/* SPLUNK_PROFILER_ENABLED=true (any case). */
bool proc_facts__labelled(const struct proc_facts *facts);
