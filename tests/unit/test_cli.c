/* test_cli.c — cli__parse: flags into the config, the precedence flag >
 * environment > --config file > default, one-line errors for invalid
 * values, and the subcommands.  The environment is cleared first, so the
 * only variables are the ones a test sets. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/cli.h"
#include "cli/config_file.h"
#include "unwind/stack_merge.h"

static struct profd_config config;
static char error[512];

/* Parses a NULL-terminated argv (program name first). */
static enum cli_result parse_from(const struct config_source *source, char **argv)
{
        int argc = 0;

        while (argv[argc])
                argc++;
        error[0] = '\0';
        return cli__parse(argc, argv, source, &config, error, sizeof(error));
}

#define PARSE(...)              parse_from(NULL, (char *[]){"splunk-profd", __VA_ARGS__, NULL})
#define PARSE_FROM(source, ...) parse_from(source, (char *[]){"splunk-profd", __VA_ARGS__, NULL})

/* A usage error of one line that mentions `word`. */
static void check_error(enum cli_result result, const char *word)
{
        if (result != CLI_USAGE_ERROR || !strstr(error, word) || strchr(error, '\n')) {
                fprintf(stderr, "expected a one-line error about '%s', got %d: '%s'\n", word,
                        result, error);
                exit(1);
        }
}

static void test_flags(void)
{
        CHECK(PARSE("--pid", "12", "--pid", "34", "--pid", "12", "-i", "10", "-d", "2.5", "-o",
                    "out.svg", "--stack-bytes", "8192", "--max-depth", "10", "--native=all", "-vv",
                    "--no-export") == CLI_RUN);
        CHECK(config.command == COMMAND_RECORD);
        CHECK(config.n_pids == 2 && config.pids[0] == 12 && config.pids[1] == 34);
        CHECK(config.interval_ms == 10);
        CHECK(config.duration_s == 2.5);
        CHECK(strcmp(config.output, "out.svg") == 0 && config.format == OUTPUT_SVG);
        CHECK(config.stack_bytes == 8192 && config.max_depth == 10);
        CHECK(config.native_mode == NATIVE_MODE_ALL);
        CHECK(config.verbosity == 2);
        CHECK(!config.export.enabled);

        /* Defaults, and --format over the extension. */
        CHECK(PARSE("-p", "1", "-o", "x.txt", "--format", "pprof") == CLI_RUN);
        CHECK(config.format == OUTPUT_PPROF && config.format_given);
        CHECK(PARSE("-p1", "-ox.txt") == CLI_RUN);
        CHECK(config.format == OUTPUT_COLLAPSED && config.pids[0] == 1);
        CHECK(config.interval_ms == 1000 && config.stack_bytes == 32768 &&
              config.max_depth == 1024 && config.duration_s == 0 && config.verbosity == 0);
        CHECK(config.native_mode == NATIVE_MODE_DEFAULT);
}

static void test_environment_precedence(void)
{
        setenv("SPLUNK_PROFILER_CALL_STACK_INTERVAL", "50", 1);
        CHECK(PARSE("--pid", "1") == CLI_RUN && config.interval_ms == 50);
        CHECK(PARSE("--pid", "1", "--interval", "20") == CLI_RUN && config.interval_ms == 20);
        /* An invalid value is an error even when a flag overrides it. */
        setenv("SPLUNK_PROFILER_CALL_STACK_INTERVAL", "5x", 1);
        check_error(PARSE("--pid", "1", "--interval", "20"),
                    "SPLUNK_PROFILER_CALL_STACK_INTERVAL=5x");
        unsetenv("SPLUNK_PROFILER_CALL_STACK_INTERVAL");

        setenv("SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS", "TRUE", 1);
        CHECK(PARSE("--pid", "1") == CLI_RUN && config.include_internal_stacks);
        setenv("SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS", "off", 1);
        CHECK(PARSE("--pid", "1") == CLI_RUN && !config.include_internal_stacks);
        setenv("SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS", "maybe", 1);
        check_error(PARSE("--pid", "1"), "SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS=maybe");
        unsetenv("SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS");
        CHECK(PARSE("--pid", "1") == CLI_RUN && !config.include_internal_stacks);

        /* --allow replaces the environment's list; without it, the list stays. */
        setenv("SPLUNK_PROFILER_WATCH_ALLOW", "uid:1000,exe:/usr/bin/*", 1);
        CHECK(PARSE("--watch") == CLI_RUN && config.rules.allow.n == 2);
        CHECK(PARSE("--watch", "--allow", "uid:0") == CLI_RUN && config.rules.allow.n == 1);
        unsetenv("SPLUNK_PROFILER_WATCH_ALLOW");

        setenv("SPLUNK_PROFILER_HEALTH_INTERVAL", "5", 1);
        CHECK(PARSE("--watch") == CLI_RUN && config.health_interval_s == 5);
        CHECK(PARSE("--watch", "--health-interval", "0") == CLI_RUN &&
              config.health_interval_s == 0);
        unsetenv("SPLUNK_PROFILER_HEALTH_INTERVAL");
        CHECK(PARSE("--watch") == CLI_RUN && config.health_interval_s == 60);
}

/* A file's KEY=VALUE, in the place main would have put it. */
static void file_entry(struct config_file *file, char *key, char *value)
{
        file->keys[file->n] = key;
        file->values[file->n] = value;
        file->from_file[file->n] = true;
        file->n++;
}

/* On SIGHUP the file is read through config_source: the environment still
 * wins over it unless the value came from the file at start. */
static void test_config_file_precedence(void)
{
        struct config_file startup = {0}, current = {0};
        struct config_source source = {.startup = &startup, .current = &current};

        file_entry(&current, "SPLUNK_PROFILER_CALL_STACK_INTERVAL", "70");
        CHECK(PARSE_FROM(&source, "--watch") == CLI_RUN && config.interval_ms == 70);
        CHECK(PARSE_FROM(&source, "--watch", "-i", "15") == CLI_RUN && config.interval_ms == 15);
        setenv("SPLUNK_PROFILER_CALL_STACK_INTERVAL", "30", 1);
        CHECK(PARSE_FROM(&source, "--watch") == CLI_RUN && config.interval_ms == 30);
        /* The same variable merged from the startup file: the current file wins. */
        file_entry(&startup, "SPLUNK_PROFILER_CALL_STACK_INTERVAL", "30");
        CHECK(PARSE_FROM(&source, "--watch") == CLI_RUN && config.interval_ms == 70);
        unsetenv("SPLUNK_PROFILER_CALL_STACK_INTERVAL");

        current.values[0] = "abc";
        check_error(PARSE_FROM(&source, "--watch"), "SPLUNK_PROFILER_CALL_STACK_INTERVAL=abc");
}

static void test_invalid_values(void)
{
        check_error(PARSE("--pid", "1", "--interval", "abc"), "--interval abc");
        check_error(PARSE("--pid", "1", "-i", "0"), "--interval 0");
        check_error(PARSE("--pid", "1", "-i", "3600001"), "--interval 3600001");
        check_error(PARSE("--pid", "1", "-d", "-1"), "--duration -1");
        check_error(PARSE("--pid", "1", "-d", "1s"), "--duration 1s");
        check_error(PARSE("--pid", "abc"), "--pid abc");
        check_error(PARSE("--pid", "0"), "--pid 0");
        check_error(PARSE("--pid", "1", "--stack-bytes", "4095"), "--stack-bytes 4095");
        check_error(PARSE("--pid", "1", "--max-depth", "4097"), "--max-depth 4097");
        check_error(PARSE("--pid", "1", "--native=some"), "--native some");
        check_error(PARSE("--pid", "1", "-o", ""), "--output");
        check_error(PARSE("--pid", "1", "-o", "x", "--format", "png"), "--format png");
        check_error(PARSE("--pid", "1", "--format", "svg"), "--format needs --output");
        check_error(PARSE("--pid", "1", "--flush-interval", "0"), "--flush-interval 0");
        check_error(PARSE("--pid", "1", "--export-memory-mb", "7"), "--export-memory-mb 7");
        check_error(PARSE("--pid", "1", "--endpoint", "ftp://x"), "--endpoint");
        check_error(PARSE("--pid", "1", "--endpoint", "http://h:1", "--no-export"), "--no-export");
        check_error(PARSE("--watch", "--deny", "colour:red"), "--deny");
        check_error(PARSE("--watch", "--health-interval", "-3"), "--health-interval -3");
        check_error(PARSE("--watch", "--pid", "1"), "--watch and --pid");
        check_error(PARSE("-d", "1"), "no target");
        check_error(PARSE("--pid", "1", "--bogus"), "--bogus: unknown option");
        check_error(PARSE("--pid"), "--pid: unknown option or missing value");
        check_error(PARSE("--pid", "1", "extra"), "unexpected argument 'extra'");
        check_error(PARSE("top", "--pid", "1", "--thread", "a-name-of-16-chars"), "--thread");
        setenv("SPLUNK_PROFILER_ENABLED", "perhaps", 1);
        check_error(PARSE("--pid", "1"), "SPLUNK_PROFILER_ENABLED=perhaps");
        unsetenv("SPLUNK_PROFILER_ENABLED");
}

static void test_subcommands(void)
{
        CHECK(PARSE("dump", "--pid", "7", "--json", "--stack-bytes", "4096") == CLI_RUN);
        CHECK(config.command == COMMAND_DUMP && config.json && config.max_ticks == 1);
        CHECK(config.interval_ms == 1 && !config.export.enabled && config.stack_bytes == 4096);

        CHECK(PARSE("top", "-p", "7", "-t", "worker", "--idle") == CLI_RUN);
        CHECK(config.command == COMMAND_TOP && config.interval_ms == 10);
        CHECK(strcmp(config.thread_filter, "worker") == 0 && config.include_idle);
        CHECK(PARSE("top", "-p", "7", "-i", "250") == CLI_RUN && config.interval_ms == 250);

        CHECK(PARSE("record", "-p", "7") == CLI_RUN && config.command == COMMAND_RECORD);

        /* Options of another command are rejected, by their name. */
        check_error(PARSE("dump", "--pid", "1", "--duration", "5"),
                    "--duration: not an option of `dump`");
        check_error(PARSE("dump", "--pid", "1", "-i", "5"), "--interval: not an option of `dump`");
        check_error(PARSE("top", "--pid", "1", "-j"), "--json: not an option of `top`");
        check_error(PARSE("--pid", "1", "--idle"), "--idle: not an option of `record`");
        check_error(PARSE("dump", "--watch"), "--watch: not an option of `dump`");
        check_error(PARSE("frobnicate", "--pid", "1"), "unknown command 'frobnicate'");

        /* dump -- COMMAND: the one tick comes --wait SEC after the start. */
        /* config.command_argv points into argv, which must outlive it (as
         * main's does): not a compound literal of one statement. */
        static char *launch[] = {"splunk-profd", "dump",    "--wait", "0.5", "--json",
                                 "--",           "python3", "app.py", NULL};
        CHECK(parse_from(NULL, launch) == CLI_RUN);
        CHECK(config.first_tick_delay_s == 0.5 && config.max_ticks == 1 && config.json);
        CHECK(strcmp(config.command_argv[0], "python3") == 0);
        CHECK(PARSE("dump", "--pid", "7") == CLI_RUN && config.first_tick_delay_s == 0);
        check_error(PARSE("dump", "--", "true"), "needs --wait SEC");
        check_error(PARSE("dump", "--wait", "1", "--pid", "7"), "--wait needs -- COMMAND");
        check_error(PARSE("dump", "--wait", "1"), "--wait needs -- COMMAND");
        check_error(PARSE("dump", "--wait", "0", "--", "true"), "--wait 0: not a positive");
        check_error(PARSE("dump", "--wait", "-1", "--", "true"), "--wait -1: not a positive");
        check_error(PARSE("dump", "--wait", "1s", "--", "true"), "--wait 1s: not a positive");
        check_error(PARSE("record", "--wait", "1", "--", "true"), "--wait: not an option");
}

/* --help prints the command's options and nothing of the others'. */
static char *help_of(char **argv)
{
        FILE *saved = stdout;
        char *text = NULL;
        size_t size = 0;
        int argc = 0;

        while (argv[argc])
                argc++;
        stdout = open_memstream(&text, &size);
        CHECK(stdout);
        enum cli_result result = cli__parse(argc, argv, NULL, &config, error, sizeof(error));
        fclose(stdout);
        stdout = saved;
        CHECK(result == CLI_EXIT_OK);
        return text;
}

static void test_help(void)
{
        char *dump = help_of((char *[]){"splunk-profd", "dump", "--help", NULL});
        CHECK(strncmp(dump, "Usage: splunk-profd dump", 24) == 0);
        CHECK(strstr(dump, "  -j, --json             one JSON document"));
        CHECK(strstr(dump, "      --native=MODE      "));
        CHECK(!strstr(dump, "--duration") && !strstr(dump, "--watch"));
        CHECK(strstr(dump, "      --wait SEC         with -- COMMAND"));
        free(dump);

        char *top = help_of((char *[]){"splunk-profd", "top", "-h", NULL});
        CHECK(strstr(top, "  -i, --interval MS      sampling period in ms (default 10)\n"));
        CHECK(strstr(top, "--idle") && !strstr(top, "--json"));
        free(top);

        char *bare = help_of((char *[]){"splunk-profd", "--help", NULL});
        CHECK(strstr(bare, "splunk-profd top --pid PID"));                     /* the overview */
        CHECK(strstr(bare, "Daemon mode (instead of --pid):\n  -w, --watch")); /* record's */
        CHECK(strstr(
            bare, "      --flush-interval MS  one Splunk record per target per MS (default: the\n"
                  "                         interval, at least 1000)\n"));
        free(bare);

        char *version = help_of((char *[]){"splunk-profd", "dump", "-V", NULL});
        CHECK(strncmp(version, "splunk-profd ", 13) == 0);
        free(version);
}

/* A parse that stopped inside "-jv" must not leave getopt there. */
static void test_parses_are_independent(void)
{
        check_error(PARSE("-jv", "--pid", "1"), "--json: not an option of `record`");
        CHECK(PARSE("--pid", "2") == CLI_RUN);
        CHECK(config.verbosity == 0 && config.n_pids == 1 && config.pids[0] == 2);
        CHECK(PARSE("dump", "-p", "3") == CLI_RUN && config.command == COMMAND_DUMP);
        CHECK(PARSE("-p", "3") == CLI_RUN && config.command == COMMAND_RECORD);
}

int main(void)
{
        clearenv();
        test_flags();
        test_environment_precedence();
        test_config_file_precedence();
        test_invalid_values();
        test_subcommands();
        test_help();
        test_parses_are_independent();
        return 0;
}
