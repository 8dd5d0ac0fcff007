/* watch_rules.c — see watch_rules.h. */
#include "engine/watch_rules.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
        const char *prefix;
        enum watch_rule_kind kind;
} kinds[] = {
    {"exe:", RULE_EXE},       {"uid:", RULE_UID}, {"unit:", RULE_UNIT},
    {"cgroup:", RULE_CGROUP}, {"env:", RULE_ENV},
};

static bool parse_rule(const char *text, size_t len, struct watch_rule *rule)
{
        memset(rule, 0, sizeof(*rule));
        if (len && text[0] == '!') {
                rule->negated = true;
                text++;
                len--;
        }
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
                size_t n = strlen(kinds[i].prefix);
                if (len <= n || strncmp(text, kinds[i].prefix, n) != 0 ||
                    len - n >= WATCH_PATTERN_MAX)
                        continue;
                rule->kind = kinds[i].kind;
                memcpy(rule->pattern, text + n, len - n);
                if (rule->kind == RULE_ENV && !strchr(rule->pattern, '='))
                        return false;
                if (rule->kind == RULE_UID)
                        return strspn(rule->pattern, "0123456789") == strlen(rule->pattern);
                return true;
        }
        return false;
}

bool watch_rule_list__add(struct watch_rule_list *list, const char *text, const char *what,
                          char *error, size_t error_size)
{
        const char *start = text;

        while (*start) {
                size_t len = strcspn(start, ",");
                while (len && (*start == ' ' || *start == '\t')) {
                        start++;
                        len--;
                }
                if (len && list->n == WATCH_MAX_RULES) {
                        snprintf(error, error_size, "%s: more than %d rules", what,
                                 WATCH_MAX_RULES);
                        return false;
                }
                if (len && !parse_rule(start, len, &list->rules[list->n++])) {
                        snprintf(error, error_size,
                                 "%s: bad rule '%.*s' (want [!]exe:GLOB, uid:N, unit:GLOB, "
                                 "cgroup:GLOB or env:K=V)",
                                 what, (int)(len > 64 ? 64 : len), start);
                        return false;
                }
                start += len;
                if (*start == ',')
                        start++;
        }
        return true;
}

bool proc_facts__has_env(const struct proc_facts *facts, const char *entry)
{
        size_t n = strlen(entry);

        for (size_t at = 0; at < facts->environ_len;) {
                const char *item = facts->environ + at;
                size_t len = strnlen(item, facts->environ_len - at);
                if (len == n && memcmp(item, entry, n) == 0)
                        return true;
                at += len + 1;
        }
        return false;
}

bool proc_facts__labelled(const struct proc_facts *facts)
{
        static const char name[] = "SPLUNK_PROFILER_ENABLED=";

        for (size_t at = 0; at < facts->environ_len;) {
                const char *item = facts->environ + at;
                size_t len = strnlen(item, facts->environ_len - at);
                if (len == sizeof(name) - 1 + 4 && memcmp(item, name, sizeof(name) - 1) == 0 &&
                    strncasecmp(item + sizeof(name) - 1, "true", 4) == 0)
                        return true;
                at += len + 1;
        }
        return false;
}

static bool rule__matches(const struct watch_rule *rule, const struct proc_facts *facts)
{
        switch (rule->kind) {
        case RULE_EXE:
                return fnmatch(rule->pattern, facts->exe, 0) == 0;
        case RULE_UID:
                return strtoul(rule->pattern, NULL, 10) == (unsigned long)facts->uid;
        case RULE_UNIT:
                return facts->unit[0] && fnmatch(rule->pattern, facts->unit, 0) == 0;
        case RULE_CGROUP:
                return fnmatch(rule->pattern, facts->cgroup, 0) == 0;
        case RULE_ENV:
                return proc_facts__has_env(facts, rule->pattern);
        }
        return false;
}

bool watch_rule_list__matches(const struct watch_rule_list *list, const struct proc_facts *facts)
{
        for (size_t i = 0; i < list->n; i++)
                if (rule__matches(&list->rules[i], facts) != list->rules[i].negated)
                        return true;
        return false;
}
