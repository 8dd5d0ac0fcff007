/* test_watch_rules.c — unit tests for engine/watch_rules.c: parsing of
 * [!]KIND:PATTERN lists, what each KIND matches, negation, the
 * environment label, and that bad rules are refused with a message. */
#include <stdio.h>
#include <string.h>

#include "engine/watch_rules.h"
#include "tests/unit/check.h"

static struct proc_facts facts_of(const char *exe, uid_t uid, const char *unit, const char *cgroup,
                                  char *environ, size_t environ_len)
{
        struct proc_facts facts = {.pid = 1234, .uid = uid};

        snprintf(facts.exe, sizeof(facts.exe), "%s", exe);
        snprintf(facts.unit, sizeof(facts.unit), "%s", unit);
        snprintf(facts.cgroup, sizeof(facts.cgroup), "%s", cgroup);
        facts.environ = environ;
        facts.environ_len = environ_len;
        return facts;
}

/* A list of the rules in `text`, which must parse. */
static struct watch_rule_list parsed(const char *text)
{
        struct watch_rule_list list = {0};
        char error[256] = "";

        if (!watch_rule_list__add(&list, text, "--allow", error, sizeof(error))) {
                fprintf(stderr, "'%s' refused: %s\n", text, error);
                CHECK(!"a good rule list was refused");
        }
        return list;
}

static void test_parse_each_kind(void)
{
        struct watch_rule_list list =
            parsed("exe:/usr/bin/*, uid:1000,unit:web.service,\tcgroup:/system.slice/*,"
                   "env:APP=web,!exe:/bin/sh");

        CHECK(list.n == 6);
        CHECK(list.rules[0].kind == RULE_EXE && strcmp(list.rules[0].pattern, "/usr/bin/*") == 0);
        CHECK(list.rules[1].kind == RULE_UID && strcmp(list.rules[1].pattern, "1000") == 0);
        CHECK(list.rules[2].kind == RULE_UNIT && strcmp(list.rules[2].pattern, "web.service") == 0);
        CHECK(list.rules[3].kind == RULE_CGROUP &&
              strcmp(list.rules[3].pattern, "/system.slice/*") == 0);
        CHECK(list.rules[4].kind == RULE_ENV && strcmp(list.rules[4].pattern, "APP=web") == 0);
        CHECK(list.rules[5].kind == RULE_EXE && list.rules[5].negated &&
              strcmp(list.rules[5].pattern, "/bin/sh") == 0);
        for (size_t i = 0; i < 5; i++)
                CHECK(!list.rules[i].negated);

        /* Empty items and a trailing comma add nothing; lists accumulate. */
        list = parsed("exe:/a,,exe:/b,");
        CHECK(list.n == 2 && strcmp(list.rules[1].pattern, "/b") == 0);
        CHECK(parsed("").n == 0);
        char error[64];
        CHECK(watch_rule_list__add(&list, "uid:0", "--allow", error, sizeof(error)) && list.n == 3);
}

static void test_each_kind_matches(void)
{
        char environ[] = "PATH=/bin\0APP=web\0APP_X=1";
        struct proc_facts web = facts_of("/usr/bin/python3.12", 1000, "web.service",
                                         "/system.slice/web.service", environ, sizeof(environ));
        struct proc_facts other =
            facts_of("/opt/app/bin/server", 0, "", "/user.slice/user-0.slice", NULL, 0);
        static const char *const rules[] = {
            "exe:/usr/bin/python*", "uid:1000",    "unit:web.*", "cgroup:/system.slice/*",
            "cgroup:*/web.service", "env:APP=web",
        };

        for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
                struct watch_rule_list list = parsed(rules[i]);
                if (!watch_rule_list__matches(&list, &web) ||
                    watch_rule_list__matches(&list, &other)) {
                        fprintf(stderr, "rule '%s' matched wrongly\n", rules[i]);
                        CHECK(!"a rule matched the wrong process");
                }
        }
        /* uid is compared as a number, env as an exact entry, and a unit
         * rule never matches a process outside any unit. */
        CHECK(!watch_rule_list__matches(&(struct watch_rule_list){0}, &web));
        struct watch_rule_list list = parsed("uid:01000");
        CHECK(watch_rule_list__matches(&list, &web));
        list = parsed("env:APP=we,env:APP_X=,env:PATH=/bi*");
        CHECK(list.n == 3 && !watch_rule_list__matches(&list, &web));
        list = parsed("unit:*");
        CHECK(watch_rule_list__matches(&list, &web) && !watch_rule_list__matches(&list, &other));
}

static void test_negation(void)
{
        struct proc_facts web =
            facts_of("/usr/bin/python3", 1000, "web.service", "/system.slice/web.service", NULL, 0);
        struct proc_facts db =
            facts_of("/usr/bin/postgres", 26, "db.service", "/system.slice/db.service", NULL, 0);
        struct proc_facts none = facts_of("/usr/bin/cat", 0, "", "/", NULL, 0);
        struct watch_rule_list list = parsed("!unit:web.service");

        /* As a deny list: everything outside web.service is denied. */
        CHECK(!watch_rule_list__matches(&list, &web));
        CHECK(watch_rule_list__matches(&list, &db));
        CHECK(watch_rule_list__matches(&list, &none));
        /* Any one rule suffices: "not uid 26, or exe postgres" matches all. */
        list = parsed("!uid:26,exe:/usr/bin/postgres");
        CHECK(watch_rule_list__matches(&list, &web) && watch_rule_list__matches(&list, &db));
        list = parsed("!exe:/usr/bin/*");
        CHECK(!watch_rule_list__matches(&list, &web) && !watch_rule_list__matches(&list, &db));
}

static void expect_refused(const char *text, const char *in_message)
{
        struct watch_rule_list list = {0};
        char error[256] = "";

        if (watch_rule_list__add(&list, text, "--deny", error, sizeof(error))) {
                fprintf(stderr, "'%s' was accepted\n", text);
                CHECK(!"a bad rule was accepted");
        }
        if (!strstr(error, in_message) || strncmp(error, "--deny: ", 8) != 0) {
                fprintf(stderr, "'%s': message '%s' lacks '%s'\n", text, error, in_message);
                CHECK(!"the message does not name the rule");
        }
}

static void test_bad_rules(void)
{
        char long_rule[WATCH_PATTERN_MAX + 16], many[40 * 8] = "";

        expect_refused("comm:python", "bad rule 'comm:python'");
        expect_refused("exe:/a,pid:1", "bad rule 'pid:1'");
        expect_refused("exe", "bad rule 'exe'");
        expect_refused("exe:", "bad rule 'exe:'");
        expect_refused("!", "bad rule '!'");
        expect_refused("uid:root", "bad rule 'uid:root'");
        expect_refused("uid:-1", "bad rule 'uid:-1'");
        expect_refused("env:PATH", "bad rule 'env:PATH'");
        expect_refused("EXE:/bin/sh", "bad rule 'EXE:/bin/sh'");
        /* A pattern must fit; a longer one is refused, not cut. */
        snprintf(long_rule, sizeof(long_rule), "exe:/%0*d", WATCH_PATTERN_MAX - 1, 0);
        expect_refused(long_rule, "bad rule 'exe:/000"); /* no room for the NUL */
        snprintf(long_rule, sizeof(long_rule), "exe:/%0*d", WATCH_PATTERN_MAX - 2, 0);
        CHECK(parsed(long_rule).n == 1 &&
              strlen(parsed(long_rule).rules[0].pattern) == WATCH_PATTERN_MAX - 1);
        /* At most WATCH_MAX_RULES. */
        for (int i = 0; i < WATCH_MAX_RULES; i++)
                strcat(many, "uid:1,");
        CHECK(parsed(many).n == WATCH_MAX_RULES);
        strcat(many, "uid:2");
        expect_refused(many, "more than 32 rules");
}

static void test_environment_label(void)
{
        char on[] = "A=1\0SPLUNK_PROFILER_ENABLED=TRUE\0B=2";
        char off[] = "SPLUNK_PROFILER_ENABLED=false\0SPLUNK_PROFILER_ENABLED=truex";
        char cut[] = "X=1\0SPLUNK_PROFILER_ENABLED=true"; /* no NUL counted at the end */
        struct proc_facts facts = facts_of("/bin/x", 0, "", "/", on, sizeof(on));

        CHECK(proc_facts__labelled(&facts));
        CHECK(proc_facts__has_env(&facts, "B=2") && !proc_facts__has_env(&facts, "B=") &&
              !proc_facts__has_env(&facts, "A"));
        facts = facts_of("/bin/x", 0, "", "/", off, sizeof(off));
        CHECK(!proc_facts__labelled(&facts));
        facts = facts_of("/bin/x", 0, "", "/", cut, sizeof(cut) - 3); /* ends in "=tr" */
        CHECK(!proc_facts__labelled(&facts) && proc_facts__has_env(&facts, "X=1"));
        facts = facts_of("/bin/x", 0, "", "/", NULL, 0);
        CHECK(!proc_facts__labelled(&facts) && !proc_facts__has_env(&facts, "X=1"));
}

int main(void)
{
        test_parse_each_kind();
        test_each_kind_matches();
        test_negation();
        test_bad_rules();
        test_environment_label();
        printf("ok\n");
        return 0;
}
