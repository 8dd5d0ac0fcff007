/* cli.c — command line and environment for the three subcommands:
 *
 *   splunk-profd [record] --pid N ...   sample and write a profile (the
 *                                       default; `record` is optional so
 *                                       older command lines keep working)
 *   splunk-profd dump --pid N [--json]  every thread's stack, once (or of a
 *                                       COMMAND it starts, after --wait SEC)
 *   splunk-profd top --pid N            live hottest functions
 *
 * Every option is one row of `options` below: its names, its value, the
 * commands that accept it, its --help text and the handler that applies
 * it.  The getopt tables and each command's --help are generated from it,
 * and tests/unit/test_cli_man.c checks splunk-profd(1) against it, so an
 * option is added in one place.  An option a command does not accept is a
 * usage error (`dump --duration 5`) instead of being ignored.
 *
 * Every value is validated here, with a one-line reason on failure, so the
 * rest of the program can trust the config.  Numbers must be whole (no
 * trailing junk) and inside documented ranges. */
#include "cli/cli.h"
#include "cli/config_file.h"
#include "unwind/stack_merge.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_INTERVAL_MS 1000
#define DEFAULT_STACK_BYTES (32 * 1024)
#define DEFAULT_MAX_DEPTH   1024

#define DEFAULT_HEALTH_INTERVAL_S 60

#define DUMP_INTERVAL_MS 1  /* the single tick comes at once */
#define TOP_INTERVAL_MS  10 /* 100 Hz: a useful top needs many samples per second */

#define N_COMMANDS (COMMAND_TOP + 1)
/* getopt values of options without a short letter: LONG_ONLY + row. */
#define LONG_ONLY 256
/* --help: the text column, and the width of the names before it. */
#define HELP_COLUMN 25
#define HELP_NAMES  (HELP_COLUMN - 2)

static const char overview_text[] =
    "Usage: splunk-profd [record] --pid PID [options]   sample, write a profile\n"
    "       splunk-profd record [options] -- COMMAND...  start COMMAND, profile it\n"
    "       splunk-profd dump --pid PID [--json]        every thread's stack, once\n"
    "       splunk-profd dump --wait SEC -- COMMAND...   start COMMAND, dump it later\n"
    "       splunk-profd top --pid PID [--thread T]     live hottest functions\n"
    "       splunk-profd --watch [--allow R] [--deny R] daemon: every labelled process\n"
    "       splunk-profd COMMAND --help                 options of a command\n"
    "       splunk-profd --version\n"
    "\n"
    "An out-of-process CPU profiler: samples the threads of running processes\n"
    "from outside, without restarting or instrumenting them.  Python targets\n"
    "get merged Python and native stacks.  See splunk-profd(1).\n"
    "\n";

/* Each command's --help: `intro`, its options (generated), `outro`. */
static const char record_intro[] =
    "Usage: splunk-profd [record] --pid PID [--pid PID ...] [options]\n"
    "       splunk-profd [record] --name PATTERN [--all-matches] [options]\n"
    "       splunk-profd [record] [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Samples the threads of running processes, or of COMMAND started under\n"
    "the profiler from its first instruction, and writes a profile.\n"
    "\n";

static const char record_outro[] =
    "\n"
    "On a terminal a one-line progress display runs on stderr.\n"
    "\n"
    "Examples:\n"
    "  splunk-profd --pid 1234 --interval 10 --duration 30 --output cpu.pb.gz\n"
    "  go tool pprof -top cpu.pb.gz\n"
    "  splunk-profd record --pid 1234 -i 10 -d 30 -o flame.svg    # open in a browser\n"
    "  splunk-profd record --pid 1234 -i 10 -d 30 -o cpu.txt      # flamegraph.pl input\n"
    "  splunk-profd record --pid 1234 -i 10 -d 30 -o cpu.json     # speedscope.app\n"
    "  splunk-profd --pid 1234 --endpoint http://localhost:4317\n"
    "  splunk-profd record -i 10 -o flame.svg -- python3 app.py\n"
    "  splunk-profd record --name 'gunicorn*' --all-matches -o cpu.txt --threads\n"
    "\n"
    "With -- COMMAND: stdin, stdout and stderr are COMMAND's; Ctrl-C reaches\n"
    "it as usual (kill -INT/-TERM/-HUP of splunk-profd is passed on to it);\n"
    "the profile is written when it exits or --duration ends, and\n"
    "splunk-profd exits with COMMAND's status (128+N after signal N).  A\n"
    "COMMAND that cannot be started is exit status 2.\n"
    "\n"
    "Export to Splunk is on with --endpoint, SPLUNK_PROFILER_LOGS_ENDPOINT or\n"
    "SPLUNK_PROFILER_ENABLED=true; off otherwise or with --no-export.\n"
    "\n"
    "Exit status: 0 done, 1 runtime failure (e.g. output not writable),\n"
    "2 usage error, 3 a target cannot be profiled.\n";

static const char dump_intro[] =
    "Usage: splunk-profd dump --pid PID [--pid PID ...] [options]\n"
    "       splunk-profd dump --name PATTERN [--all-matches] [options]\n"
    "       splunk-profd dump --wait SEC [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Prints every thread's current stack once: merged Python and native frames\n"
    "with file:line, thread name, OS thread id, Python thread id, state\n"
    "(running, or blocked and in which syscall) and trace/span ids when known.\n"
    "Each thread is stopped no longer than for one sample; blocked threads are\n"
    "not stopped at all.\n"
    "\n";

static const char dump_outro[] =
    "\n"
    "Examples:\n"
    "  splunk-profd dump --pid 1234\n"
    "  splunk-profd dump --pid 1234 --json | jq '.processes[].threads[].name'\n"
    "  splunk-profd dump --wait 5 -- python3 app.py\n"
    "\n"
    "With -- COMMAND: COMMAND is started under the profiler (stdin, stdout\n"
    "and stderr are its own), runs for --wait SEC, has its stacks dumped\n"
    "once, then runs on untraced; splunk-profd exits with its status (128+N\n"
    "after signal N).  A COMMAND that exits before SEC gets no dump, only a\n"
    "warning, and its status.  A COMMAND that cannot be started is exit\n"
    "status 2.\n"
    "\n"
    "Exit status: 0 done, 1 runtime failure, 2 usage error,\n"
    "3 a target cannot be profiled.\n";

static const char top_intro[] =
    "Usage: splunk-profd top --pid PID [--pid PID ...] [options]\n"
    "       splunk-profd top [options] -- COMMAND [ARGS...]\n"
    "\n"
    "A live view of the hottest functions (self % and total % of samples),\n"
    "refreshed every second.  Needs a terminal of at least 40x10.\n"
    "\n";

static const char top_outro[] = "\n"
                                "Keys: q or Ctrl-C quit; s sort by self, t by total, n by name;\n"
                                "f next thread filter (cycles through the threads, then all);\n"
                                "i toggle idle samples; r reset the counts.\n"
                                "\n"
                                "Examples:\n"
                                "  splunk-profd top --pid 1234\n"
                                "  splunk-profd top --pid 1234 --thread worker-1 --idle\n"
                                "  splunk-profd top --subprocesses -- python3 server.py\n"
                                "\n"
                                "With -- COMMAND: quitting top sends COMMAND SIGTERM;\n"
                                "top ends when COMMAND exits, with its status.\n"
                                "\n"
                                "Exit status: 0 done, 1 runtime failure, 2 usage error,\n"
                                "3 a target cannot be profiled.\n";

struct command_spec {
        const char *name;
        enum profd_command command;
        const char *intro, *outro;
};

static const struct command_spec commands[N_COMMANDS] = {
    {"record", COMMAND_RECORD, record_intro, record_outro},
    {"dump", COMMAND_DUMP, dump_intro, dump_outro},
    {"top", COMMAND_TOP, top_intro, top_outro},
};

/* One parse of argv: what the option handlers read and write. */
struct parse {
        struct profd_config *config;
        const struct command_spec *spec;
        bool bare;           /* no command word: --help shows the overview too */
        bool interval_given; /* top keeps its own default otherwise */
        bool rules_given[2]; /* --allow, --deny: the first replaces the environment's list */
        char *error;
        size_t error_size;
};

__attribute__((format(printf, 2, 3))) static enum cli_result fail(struct parse *parse,
                                                                  const char *format, ...)
{
        va_list args;

        va_start(args, format);
        vsnprintf(parse->error, parse->error_size, format, args);
        va_end(args);
        return CLI_USAGE_ERROR;
}

static bool parse_long(const char *text, long long min, long long max, long long *out)
{
        char *end;

        errno = 0;
        long long value = strtoll(text, &end, 10);
        if (errno || end == text || *end != '\0' || value < min || value > max)
                return false;
        *out = value;
        return true;
}

static bool parse_seconds(const char *text, double *out)
{
        char *end;

        errno = 0;
        double value = strtod(text, &end);
        if (errno || end == text || *end != '\0' || !isfinite(value) || value <= 0 ||
            value > 365.0 * 24 * 3600)
                return false;
        *out = value;
        return true;
}

static void defaults(struct profd_config *config)
{
        memset(config, 0, sizeof(*config));
        config->interval_ms = DEFAULT_INTERVAL_MS;
        config->stack_bytes = DEFAULT_STACK_BYTES;
        config->max_depth = DEFAULT_MAX_DEPTH;
        config->health_interval_s = DEFAULT_HEALTH_INTERVAL_S;
}

static bool parse_health_interval(const char *text, const char *what, double *out, char *error,
                                  size_t error_size)
{
        if (strcmp(text, "0") == 0) {
                *out = 0;
                return true;
        }
        if (parse_seconds(text, out))
                return true;
        snprintf(error, error_size, "%s %.64s: not a number of seconds (0: never)", what, text);
        return false;
}

/* The daemon-mode variables: rules and the health line period. */
static bool apply_watch_environment(const struct config_source *source, struct profd_config *config,
                                    char *error, size_t error_size)
{
        const char *allow = config_source__get(source, "SPLUNK_PROFILER_WATCH_ALLOW");
        const char *deny = config_source__get(source, "SPLUNK_PROFILER_WATCH_DENY");
        const char *health = config_source__get(source, "SPLUNK_PROFILER_HEALTH_INTERVAL");

        if (allow && !watch_rule_list__add(&config->rules.allow, allow,
                                           "SPLUNK_PROFILER_WATCH_ALLOW", error, error_size))
                return false;
        if (deny && !watch_rule_list__add(&config->rules.deny, deny, "SPLUNK_PROFILER_WATCH_DENY",
                                          error, error_size))
                return false;
        return !health || !*health ||
               parse_health_interval(health, "SPLUNK_PROFILER_HEALTH_INTERVAL",
                                     &config->health_interval_s, error, error_size);
}

/* A yes/no variable: true, 1, yes, on or false, 0, no, off (any case);
 * unset or empty keeps `*out`. */
static bool parse_env_bool(const struct config_source *source, const char *name, bool *out,
                           char *error, size_t error_size)
{
        static const char *const yes[] = {"true", "1", "yes", "on"};
        static const char *const no[] = {"false", "0", "no", "off"};
        const char *text = config_source__get(source, name);

        if (!text || !*text)
                return true;
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
                if (strcasecmp(text, yes[i]) == 0 || strcasecmp(text, no[i]) == 0) {
                        *out = strcasecmp(text, yes[i]) == 0;
                        return true;
                }
        }
        snprintf(error, error_size, "%s=%.32s: not true or false", name, text);
        return false;
}

static bool apply_environment(const struct config_source *source, struct profd_config *config,
                              char *error, size_t error_size)
{
        const char *interval = config_source__get(source, "SPLUNK_PROFILER_CALL_STACK_INTERVAL");
        long long value;

        if (!apply_watch_environment(source, config, error, error_size))
                return false;
        if (!parse_env_bool(source, "SPLUNK_PROFILER_INCLUDE_INTERNAL_STACKS",
                            &config->include_internal_stacks, error, error_size))
                return false;
        if (!interval || !*interval)
                return true;
        if (!parse_long(interval, 1, 3600000, &value)) {
                snprintf(error, error_size,
                         "SPLUNK_PROFILER_CALL_STACK_INTERVAL=%.64s: not a whole number of ms "
                         "in 1..3600000",
                         interval);
                return false;
        }
        config->interval_ms = value;
        return true;
}

static bool add_pid(struct profd_config *config, const char *text, char *error, size_t error_size)
{
        long long pid;

        if (!parse_long(text, 1, INT_MAX, &pid)) {
                snprintf(error, error_size, "--pid %.64s: not a process id", text);
                return false;
        }
        for (size_t i = 0; i < config->n_pids; i++)
                if (config->pids[i] == (pid_t)pid)
                        return true;
        if (config->n_pids == CONFIG_MAX_PIDS) {
                snprintf(error, error_size, "too many --pid (at most %d)", CONFIG_MAX_PIDS);
                return false;
        }
        config->pids[config->n_pids++] = (pid_t)pid;
        return true;
}

static bool parse_format(const char *name, enum output_format *out)
{
        static const struct {
                const char *name;
                enum output_format format;
        } formats[] = {
            {"pprof", OUTPUT_PPROF},
            {"collapsed", OUTPUT_COLLAPSED},
            {"speedscope", OUTPUT_SPEEDSCOPE},
            {"svg", OUTPUT_SVG},
        };

        for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
                if (strcmp(name, formats[i].name) == 0) {
                        *out = formats[i].format;
                        return true;
                }
        }
        return false;
}

static bool has_suffix(const char *text, const char *suffix)
{
        size_t n = strlen(text), m = strlen(suffix);

        return n >= m && strcasecmp(text + n - m, suffix) == 0;
}

/* The format an --output name implies; pprof for anything unknown, as
 * before this choice existed. */
static enum output_format format_from_name(const char *path)
{
        if (has_suffix(path, ".txt") || has_suffix(path, ".collapsed") ||
            has_suffix(path, ".folded"))
                return OUTPUT_COLLAPSED;
        if (has_suffix(path, ".json"))
                return OUTPUT_SPEEDSCOPE;
        if (has_suffix(path, ".svg"))
                return OUTPUT_SVG;
        return OUTPUT_PPROF;
}

/* The subcommand named by argv[1], or record when argv[1] is an option
 * (or absent); NULL for an unknown word. */
static const struct command_spec *find_command(int argc, char **argv, int *first_option)
{
        *first_option = 1;
        if (argc < 2 || argv[1][0] == '-')
                return &commands[0];
        *first_option = 2;
        for (size_t i = 0; i < N_COMMANDS; i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return &commands[i];
        if (strcmp(argv[1], "help") == 0) {
                *first_option = -1;
                return &commands[0];
        }
        return NULL;
}

static const char *lookup_config(void *source, const char *name)
{
        return config_source__get(source, name);
}

/* ------------------------------------------------------------- handlers
 * One per option: validate `arg` (NULL for options without a value) into
 * the config.  CLI_RUN to go on, CLI_EXIT_OK when the run is over (--help,
 * --version), CLI_USAGE_ERROR with parse->error set. */

static enum cli_result on_pid(struct parse *parse, const char *arg)
{
        return add_pid(parse->config, arg, parse->error, parse->error_size) ? CLI_RUN
                                                                            : CLI_USAGE_ERROR;
}

static enum cli_result on_json(struct parse *parse, const char *arg)
{
        parse->config->json = true;
        return CLI_RUN;
}

static enum cli_result on_thread(struct parse *parse, const char *arg)
{
        if (!*arg || strlen(arg) > 15)
                return fail(parse, "--thread: give a thread name (at most 15 characters) or id");
        parse->config->thread_filter = arg;
        return CLI_RUN;
}

static enum cli_result on_idle(struct parse *parse, const char *arg)
{
        parse->config->include_idle = true;
        return CLI_RUN;
}

static enum cli_result on_wall(struct parse *parse, const char *arg)
{
        parse->config->wall = true; /* the outputs show wall time, not CPU */
        return CLI_RUN;
}

static enum cli_result on_name(struct parse *parse, const char *arg)
{
        if (!*arg)
                return fail(parse, "--name: empty pattern");
        parse->config->name_pattern = arg;
        return CLI_RUN;
}

static enum cli_result on_all_matches(struct parse *parse, const char *arg)
{
        parse->config->all_matches = true;
        return CLI_RUN;
}

static enum cli_result on_subprocesses(struct parse *parse, const char *arg)
{
        parse->config->subprocesses = true;
        return CLI_RUN;
}

static enum cli_result on_threads(struct parse *parse, const char *arg)
{
        parse->config->threads = true;
        return CLI_RUN;
}

static enum cli_result on_output(struct parse *parse, const char *arg)
{
        if (!*arg)
                return fail(parse, "--output: empty file name");
        parse->config->output = arg;
        return CLI_RUN;
}

static enum cli_result on_format(struct parse *parse, const char *arg)
{
        if (!parse_format(arg, &parse->config->format))
                return fail(parse, "--format %.64s: not one of pprof, collapsed, speedscope, svg",
                            arg);
        parse->config->format_given = true;
        return CLI_RUN;
}

static enum cli_result on_wait(struct parse *parse, const char *arg)
{
        if (!parse_seconds(arg, &parse->config->first_tick_delay_s))
                return fail(parse, "--wait %.64s: not a positive number of seconds", arg);
        return CLI_RUN;
}

static enum cli_result on_duration(struct parse *parse, const char *arg)
{
        if (!parse_seconds(arg, &parse->config->duration_s))
                return fail(parse, "--duration %.64s: not a positive number of seconds", arg);
        return CLI_RUN;
}

static enum cli_result on_interval(struct parse *parse, const char *arg)
{
        long long value;

        if (!parse_long(arg, 1, 3600000, &value))
                return fail(parse, "--interval %.64s: not a whole number of ms in 1..3600000", arg);
        parse->config->interval_ms = value;
        parse->interval_given = true;
        return CLI_RUN;
}

static enum cli_result on_stack_bytes(struct parse *parse, const char *arg)
{
        long long value;

        if (!parse_long(arg, 4096, 1 << 20, &value))
                return fail(parse, "--stack-bytes %.64s: not in 4096..1048576", arg);
        parse->config->stack_bytes = (size_t)value;
        return CLI_RUN;
}

static enum cli_result on_max_depth(struct parse *parse, const char *arg)
{
        long long value;

        if (!parse_long(arg, 1, 4096, &value))
                return fail(parse, "--max-depth %.64s: not in 1..4096", arg);
        parse->config->max_depth = (size_t)value;
        return CLI_RUN;
}

static enum cli_result on_native(struct parse *parse, const char *arg)
{
        if (strcmp(arg, "default") == 0)
                parse->config->native_mode = NATIVE_MODE_DEFAULT;
        else if (strcmp(arg, "all") == 0)
                parse->config->native_mode = NATIVE_MODE_ALL;
        else if (strcmp(arg, "python-only") == 0)
                parse->config->native_mode = NATIVE_MODE_PYTHON_ONLY;
        else
                return fail(parse, "--native %.64s: not one of default, all, python-only", arg);
        return CLI_RUN;
}

static enum cli_result on_sampler(struct parse *parse, const char *arg)
{
        if (strcmp(arg, "auto") == 0)
                parse->config->sampler = SAMPLER_AUTO;
        else if (strcmp(arg, "perf") == 0)
                parse->config->sampler = SAMPLER_PERF;
        else if (strcmp(arg, "ptrace") == 0)
                parse->config->sampler = SAMPLER_PTRACE;
        else
                return fail(parse, "--sampler %.64s: not one of auto, perf, ptrace", arg);
        return CLI_RUN;
}

/* The export flags are checked against the environment in finish_command. */
static enum cli_result on_endpoint(struct parse *parse, const char *arg)
{
        parse->config->export.endpoint_flag = arg;
        return CLI_RUN;
}

static enum cli_result on_no_export(struct parse *parse, const char *arg)
{
        parse->config->export.no_export_flag = true;
        return CLI_RUN;
}

static enum cli_result on_flush_interval(struct parse *parse, const char *arg)
{
        long long value;

        if (!parse_long(arg, 1, 300000, &value))
                return fail(parse, "--flush-interval %.64s: not a whole number of ms in 1..300000",
                            arg);
        parse->config->export.flush_interval_ms = value;
        return CLI_RUN;
}

static enum cli_result on_export_memory(struct parse *parse, const char *arg)
{
        long long value;

        if (!parse_long(arg, EXPORT_MIN_MEMORY_MB, EXPORT_MAX_MEMORY_MB, &value))
                return fail(parse, "--export-memory-mb %.64s: not in %d..%d", arg,
                            EXPORT_MIN_MEMORY_MB, EXPORT_MAX_MEMORY_MB);
        parse->config->export.memory_mb = value;
        return CLI_RUN;
}

static enum cli_result on_verbose(struct parse *parse, const char *arg)
{
        parse->config->verbosity++;
        return CLI_RUN;
}

static void print_help(const struct command_spec *spec, bool bare);

static enum cli_result on_help(struct parse *parse, const char *arg)
{
        print_help(parse->spec, parse->bare);
        return CLI_EXIT_OK;
}

static enum cli_result on_version(struct parse *parse, const char *arg)
{
        printf("splunk-profd %s\n", PROFD_VERSION);
        return CLI_EXIT_OK;
}

static enum cli_result on_watch(struct parse *parse, const char *arg)
{
        parse->config->watch = true;
        return CLI_RUN;
}

/* The first --allow (--deny) replaces the environment's list. */
static enum cli_result add_rule(struct parse *parse, bool deny, const char *arg)
{
        struct watch_rule_list *list =
            deny ? &parse->config->rules.deny : &parse->config->rules.allow;

        if (!parse->rules_given[deny])
                list->n = 0;
        parse->rules_given[deny] = true;
        return watch_rule_list__add(list, arg, deny ? "--deny" : "--allow", parse->error,
                                    parse->error_size)
                   ? CLI_RUN
                   : CLI_USAGE_ERROR;
}

static enum cli_result on_allow(struct parse *parse, const char *arg)
{
        return add_rule(parse, false, arg);
}

static enum cli_result on_deny(struct parse *parse, const char *arg)
{
        return add_rule(parse, true, arg);
}

/* Read before the parse (cli__config_path); kept for SIGHUP. */
static enum cli_result on_config(struct parse *parse, const char *arg)
{
        parse->config->config_path = arg;
        return CLI_RUN;
}

static enum cli_result on_health_interval(struct parse *parse, const char *arg)
{
        return parse_health_interval(arg, "--health-interval", &parse->config->health_interval_s,
                                     parse->error, parse->error_size)
                   ? CLI_RUN
                   : CLI_USAGE_ERROR;
}

/* ----------------------------------------------------------------- table */

#define FOR_RECORD (1u << COMMAND_RECORD)
#define FOR_DUMP   (1u << COMMAND_DUMP)
#define FOR_TOP    (1u << COMMAND_TOP)
#define FOR_ALL    (FOR_RECORD | FOR_DUMP | FOR_TOP)

/* --help lists a command's options in two groups, in table order. */
enum option_group {
        GROUP_MAIN,
        GROUP_DAEMON, /* record only: "Daemon mode (instead of --pid):" */
};

struct cli_option {
        const char *name;  /* long name, without "--" */
        char letter;       /* short option, 0: none */
        const char *value; /* the value's name in --help; NULL: the option takes none */
        bool joined;       /* shown as --name=VALUE */
        unsigned commands; /* FOR_*: the commands that accept it */
        enum option_group group;
        const char *help;                     /* --help text; '\n' starts an indented line */
        const char *command_help[N_COMMANDS]; /* instead of `help` for one command */
        enum cli_result (*apply)(struct parse *parse, const char *arg);
};

static const struct cli_option options[] = {
    {.name = "pid",
     .letter = 'p',
     .value = "PID",
     .commands = FOR_ALL,
     .apply = on_pid,
     .command_help = {[COMMAND_RECORD] = "process to profile (repeatable)",
                      [COMMAND_DUMP] = "process to dump (repeatable)",
                      [COMMAND_TOP] = "process to watch (repeatable)"}},
    {.name = "name",
     .letter = 'n',
     .value = "PATTERN",
     .commands = FOR_ALL,
     .apply = on_name,
     .help = "the process whose name (comm) or executable's base name\n"
             "matches the glob PATTERN; several matches are an error"},
    {.name = "all-matches",
     .commands = FOR_ALL,
     .apply = on_all_matches,
     .help = "with --name: every matching process"},
    {.name = "subprocesses",
     .letter = 's',
     .commands = FOR_RECORD | FOR_TOP,
     .apply = on_subprocesses,
     .help = "also profile the target's child processes, those running\n"
             "at the start and those forked later (own process.pid)"},
    {.name = "json",
     .letter = 'j',
     .commands = FOR_DUMP,
     .apply = on_json,
     .help = "one JSON document on stdout instead of text"},
    {.name = "wait",
     .value = "SEC",
     .commands = FOR_DUMP,
     .apply = on_wait,
     .help = "with -- COMMAND (needed there): let COMMAND run SEC\n"
             "seconds, then dump it"},
    {.name = "thread",
     .letter = 't',
     .value = "T",
     .commands = FOR_TOP,
     .apply = on_thread,
     .help = "only threads named T or with OS thread id T"},
    {.name = "idle",
     .commands = FOR_TOP,
     .apply = on_idle,
     .help = "also count blocked (idle) samples; default: running only"},
    {.name = "output",
     .letter = 'o',
     .value = "FILE",
     .commands = FOR_RECORD,
     .apply = on_output,
     .help = "write the profile at the end; the format follows the\n"
             "extension: .pb.gz pprof (also any other name),\n"
             ".txt collapsed stacks, .json speedscope, .svg flame graph"},
    {.name = "format",
     .letter = 'f',
     .value = "FMT",
     .commands = FOR_RECORD,
     .apply = on_format,
     .help = "pprof, collapsed, speedscope or svg (overrides the extension)"},
    {.name = "threads",
     .commands = FOR_RECORD,
     .apply = on_threads,
     .help = "collapsed output: start each stack with its thread,\n"
             "\"NAME (TID)\""},
    {.name = "duration",
     .letter = 'd',
     .value = "SEC",
     .commands = FOR_RECORD,
     .apply = on_duration,
     .help = "stop after SEC seconds (default: until Ctrl-C/SIGTERM)"},
    {.name = "interval",
     .letter = 'i',
     .value = "MS",
     .commands = FOR_RECORD | FOR_TOP,
     .apply = on_interval,
     .command_help = {[COMMAND_RECORD] = "sampling period in ms (default: "
                                         "$SPLUNK_PROFILER_CALL_STACK_INTERVAL,\n"
                                         "else 1000; 10 = 100 Hz)",
                      [COMMAND_TOP] = "sampling period in ms (default 10)"}},
    {.name = "stack-bytes",
     .value = "N",
     .commands = FOR_ALL,
     .apply = on_stack_bytes,
     .help = "stack bytes copied per thread-sample (4096..1048576, default 32768)"},
    {.name = "max-depth",
     .value = "N",
     .commands = FOR_ALL,
     .apply = on_max_depth,
     .help = "frames kept per stack (1..4096, default 1024)"},
    {.name = "wall",
     .commands = FOR_RECORD,
     .apply = on_wall,
     .help = "outputs show wall time (every sample: running, runnable,\n"
             "blocked) instead of CPU time"},
    {.name = "native",
     .value = "MODE",
     .joined = true,
     .commands = FOR_ALL,
     .apply = on_native,
     .help = "Python targets: native frames kept next to Python frames:\n"
             "default (outside the interpreter), all, python-only"},
    {.name = "sampler",
     .value = "KIND",
     .joined = true,
     .commands = FOR_RECORD | FOR_TOP,
     .apply = on_sampler,
     .help = "native processes: auto (perf_event_open where allowed, else\n"
             "ptrace stops), perf (refused: an error), ptrace"},
    {.name = "endpoint",
     .value = "URL",
     .commands = FOR_RECORD,
     .apply = on_endpoint,
     .help = "export to this OTLP/gRPC collector (http:// or https://);\n"
             "default $SPLUNK_PROFILER_LOGS_ENDPOINT, else http://localhost:4317"},
    {.name = "no-export",
     .commands = FOR_RECORD,
     .apply = on_no_export,
     .help = "never export, even when SPLUNK_PROFILER_ENABLED=true"},
    {.name = "flush-interval",
     .value = "MS",
     .commands = FOR_RECORD,
     .apply = on_flush_interval,
     .help = "one Splunk record per target per MS (default: the\n"
             "interval, at least 1000)"},
    {.name = "export-memory-mb",
     .value = "N",
     .commands = FOR_RECORD,
     .apply = on_export_memory,
     .help = "memory for unsent records (8..4096, default 64);\n"
             "the oldest are dropped beyond it"},
    {.name = "verbose",
     .letter = 'v',
     .commands = FOR_ALL,
     .apply = on_verbose,
     .help = "more log lines (repeatable)"},
    {.name = "help", .letter = 'h', .commands = FOR_ALL, .apply = on_help, .help = "this text"},
    {.name = "version", .letter = 'V', .commands = FOR_ALL, .apply = on_version, .help = "version"},
    {.name = "watch",
     .letter = 'w',
     .commands = FOR_RECORD,
     .group = GROUP_DAEMON,
     .apply = on_watch,
     .help = "profile every labelled process (SPLUNK_PROFILER_ENABLED=true\n"
             "in its environment, a span-context segment, or --allow),\n"
             "and the children they fork, until SIGTERM"},
    {.name = "allow",
     .value = "RULE",
     .commands = FOR_RECORD,
     .group = GROUP_DAEMON,
     .apply = on_allow,
     .help = "also profile matching processes (repeatable; replaces\n"
             "$SPLUNK_PROFILER_WATCH_ALLOW)"},
    {.name = "deny",
     .value = "RULE",
     .commands = FOR_RECORD,
     .group = GROUP_DAEMON,
     .apply = on_deny,
     .help = "never profile matching processes (repeatable; replaces\n"
             "$SPLUNK_PROFILER_WATCH_DENY).  RULE: [!]exe:GLOB, uid:N,\n"
             "unit:GLOB, cgroup:GLOB, env:K=V"},
    {.name = "config",
     .value = "FILE",
     .commands = FOR_RECORD,
     .group = GROUP_DAEMON,
     .apply = on_config,
     .help = "KEY=VALUE file, same names as the environment; the\n"
             "environment wins over it, flags over both; SIGHUP\n"
             "re-reads it (interval, rules, health interval)"},
    {.name = "health-interval",
     .value = "SEC",
     .commands = FOR_RECORD,
     .group = GROUP_DAEMON,
     .apply = on_health_interval,
     .help = "one health line every SEC s (default\n"
             "$SPLUNK_PROFILER_HEALTH_INTERVAL, else 60; 0: never)"},
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static const char *const group_headings[] = {
    [GROUP_MAIN] = NULL,
    [GROUP_DAEMON] = "Daemon mode (instead of --pid):",
};

static bool accepts(const struct cli_option *option, const struct command_spec *spec)
{
        return option->commands & (1u << spec->command);
}

/* getopt_long's tables, from `options`. */
static void build_getopt(struct option longs[N_OPTIONS + 1], char shorts[2 * N_OPTIONS + 1])
{
        char *s = shorts;

        for (size_t i = 0; i < N_OPTIONS; i++) {
                const struct cli_option *o = &options[i];
                longs[i] = (struct option){o->name, o->value ? required_argument : no_argument,
                                           NULL, o->letter ? o->letter : LONG_ONLY + (int)i};
                if (o->letter) {
                        *s++ = o->letter;
                        if (o->value)
                                *s++ = ':';
                }
        }
        longs[N_OPTIONS] = (struct option){NULL, 0, NULL, 0};
        *s = '\0';
}

/* The row getopt_long's return value `opt` stands for, or NULL. */
static const struct cli_option *option_for(int opt)
{
        if (opt >= LONG_ONLY && (size_t)(opt - LONG_ONLY) < N_OPTIONS)
                return &options[opt - LONG_ONLY];
        for (size_t i = 0; i < N_OPTIONS; i++)
                if (options[i].letter && options[i].letter == opt)
                        return &options[i];
        return NULL;
}

const char *cli__option_name(size_t i, char *letter)
{
        if (i >= N_OPTIONS)
                return NULL;
        *letter = options[i].letter;
        return options[i].name;
}

/* One option's --help lines: "  -p, --pid PID" padded to the text column
 * (or two spaces when longer), the text's further lines indented to it. */
static void print_option(const struct cli_option *o, enum profd_command command)
{
        const char *help = o->command_help[command] ?: o->help;
        char names[64];

        snprintf(names, sizeof(names), "  %c%c%s--%s%s%s", o->letter ? '-' : ' ', o->letter ?: ' ',
                 o->letter ? ", " : "  ", o->name, o->value ? (o->joined ? "=" : " ") : "",
                 o->value ?: "");
        printf("%-*s  ", HELP_NAMES, names);
        for (const char *line = help, *end;; line = end + 1) {
                end = strchrnul(line, '\n');
                printf("%.*s\n", (int)(end - line), line);
                if (!*end)
                        break;
                printf("%*s", HELP_COLUMN, "");
        }
}

static void print_help(const struct command_spec *spec, bool bare)
{
        /* `splunk-profd --help` shows the subcommands first, then record's
         * options (record is what a bare command line does). */
        if (bare)
                fputs(overview_text, stdout);
        fputs(spec->intro, stdout);
        for (size_t g = 0; g < sizeof(group_headings) / sizeof(group_headings[0]); g++) {
                bool first = true;
                for (size_t i = 0; i < N_OPTIONS; i++) {
                        if (options[i].group != g || !accepts(&options[i], spec))
                                continue;
                        if (first && group_headings[g])
                                printf("\n%s\n", group_headings[g]);
                        first = false;
                        print_option(&options[i], spec->command);
                }
        }
        fputs(spec->outro, stdout);
}

/* Command-specific defaults and checks after the options. */
static bool finish_command(const struct config_source *source, struct profd_config *config,
                           bool interval_given, char *error, size_t error_size)
{
        switch (config->command) {
        case COMMAND_DUMP:
                config->interval_ms = DUMP_INTERVAL_MS;
                config->max_ticks = 1;
                config->export.enabled = false;
                return true;
        case COMMAND_TOP:
                if (!interval_given)
                        config->interval_ms = TOP_INTERVAL_MS;
                config->export.enabled = false;
                return true;
        case COMMAND_RECORD:
                if (config->output && !config->format_given)
                        config->format = format_from_name(config->output);
                if (config->format_given && !config->output) {
                        snprintf(error, error_size, "--format needs --output FILE");
                        return false;
                }
                if (config->threads && (!config->output || config->format != OUTPUT_COLLAPSED)) {
                        snprintf(error, error_size,
                                 "--threads needs collapsed output (--output FILE.txt)");
                        return false;
                }
                /* The export variables, like the others, from the environment
                 * or (on reload) the --config file as it is now. */
                return export_config__resolve_from(&config->export, config->interval_ms,
                                                   lookup_config, (void *)source, error,
                                                   error_size);
        }
        return true;
}

/* Applies one getopt_long result; CLI_RUN to go on. */
static enum cli_result apply_one(struct parse *parse, int opt, char **argv)
{
        const struct cli_option *option = option_for(opt);

        if (!option) /* '?' or ':' */
                return fail(parse, "%s: unknown option or missing value (see --help)",
                            argv[optind - 1]);
        /* By its table name: argv[optind - 1] is the value for "--duration 5". */
        if (!accepts(option, parse->spec))
                return fail(parse, "--%s: not an option of `%s` (see splunk-profd %s --help)",
                            option->name, parse->spec->name, parse->spec->name);
        return option->apply(parse, optarg);
}

/* Exactly one way to name the targets: --pid, --name, a COMMAND or
 * --watch; and the options that only make sense with one of them. */
static enum cli_result check_targets(struct parse *parse)
{
        const struct profd_config *config = parse->config;
        const char *given[4];
        int ways = 0;

        if (config->watch)
                given[ways++] = "--watch";
        if (config->n_pids > 0)
                given[ways++] = "--pid";
        if (config->name_pattern)
                given[ways++] = "--name";
        if (config->command_argv)
                given[ways++] = "-- COMMAND";
        if (ways > 1)
                return fail(parse, "%s and %s cannot be combined", given[0], given[1]);
        /* A dump of a process started now would show only its start-up. */
        if (config->first_tick_delay_s > 0 && !config->command_argv)
                return fail(parse, "--wait needs -- COMMAND (--pid and --name are dumped at once)");
        if (ways == 0)
                return fail(parse,
                            "no target: give --pid PID, --name PATTERN or -- COMMAND (see --help)");
        if (config->all_matches && !config->name_pattern)
                return fail(parse, "--all-matches needs --name PATTERN");
        if (config->subprocesses && config->watch)
                return fail(parse, "--subprocesses: --watch follows children already");
        if (config->command_argv && config->command == COMMAND_DUMP &&
            config->first_tick_delay_s <= 0)
                return fail(parse, "dump -- COMMAND needs --wait SEC: how long COMMAND runs "
                                   "before the dump");
        return CLI_RUN;
}

static enum cli_result parse_options(int argc, char **argv, struct parse *parse,
                                     const struct config_source *source)
{
        struct option longs[N_OPTIONS + 1];
        char shorts[2 * N_OPTIONS + 1];
        struct profd_config *config = parse->config;
        enum cli_result result;
        int opt;

        build_getopt(longs, shorts);
        while ((opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1)
                if ((result = apply_one(parse, opt, argv)) != CLI_RUN)
                        return result;
        if (optind < argc)
                return fail(parse, "unexpected argument '%.64s' (see --help)", argv[optind]);
        if ((result = check_targets(parse)) != CLI_RUN)
                return result;
        return finish_command(source, config, parse->interval_given, parse->error,
                              parse->error_size)
                   ? CLI_RUN
                   : CLI_USAGE_ERROR;
}

/* `... -- COMMAND [ARGS...]`: the options end at the first "--" and the
 * rest is the command (config->command_argv; argv is NULL-terminated).
 * Returns where the options end, or -1 for a "--" with nothing after. */
static int command_start(int argc, char **argv, int first, struct profd_config *config)
{
        for (int i = first; i < argc; i++) {
                if (strcmp(argv[i], "--") != 0)
                        continue;
                if (i + 1 >= argc)
                        return -1;
                config->command_argv = argv + i + 1;
                return i;
        }
        return argc;
}

const char *cli__config_path(int argc, char **argv)
{
        const char *path = NULL;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        break;
                if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
                        path = argv[++i];
                else if (strncmp(argv[i], "--config=", 9) == 0)
                        path = argv[i] + 9;
        }
        return path;
}

enum cli_result cli__parse(int argc, char **argv, const struct config_source *source,
                           struct profd_config *config, char *error, size_t error_size)
{
        struct parse parse = {.config = config, .error = error, .error_size = error_size};
        int first;

        defaults(config);
        parse.spec = find_command(argc, argv, &first);
        if (!parse.spec) {
                snprintf(error, error_size,
                         "unknown command '%.64s': use record, dump or top (see --help)", argv[1]);
                return CLI_USAGE_ERROR;
        }
        if (first < 0) { /* `splunk-profd help` */
                print_help(parse.spec, true);
                return CLI_EXIT_OK;
        }
        parse.bare = first == 1;
        config->command = parse.spec->command;
        /* The environment first, so that a flag given alongside it wins. */
        if (!apply_environment(source, config, error, error_size))
                return CLI_USAGE_ERROR;
        /* getopt starts afresh (optind 0) on every parse, SIGHUP's included:
         * with optind 1 it would resume a short-option cluster an earlier
         * parse stopped in.  argv[first - 1] stands in for the program name. */
        opterr = 0;
        optind = 0;
        int options_end = command_start(argc, argv, first, config);
        if (options_end < 0) {
                snprintf(error, error_size, "--: no COMMAND after it (see --help)");
                return CLI_USAGE_ERROR;
        }
        return parse_options(options_end - (first - 1), argv + (first - 1), &parse, source);
}
