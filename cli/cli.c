/* cli.c — command line and environment for the three subcommands:
 *
 *   splunk-profd [record] --pid N ...   sample and write a profile (the
 *                                       default; `record` is optional so
 *                                       older command lines keep working)
 *   splunk-profd dump --pid N [--json]  every thread's stack, once
 *   splunk-profd top --pid N            live hottest functions
 *
 * One getopt table serves all three; each subcommand lists the options it
 * accepts, so `dump --duration 5` is a usage error instead of being ignored.
 * Every value is validated here, with a one-line reason on failure, so the
 * rest of the program can trust the config.  Numbers must be whole (no
 * trailing junk) and inside documented ranges. */
#include "engine/config.h"
#include "cli/config_file.h"
#include "unwind/stack_merge.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
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

static const char overview_text[] =
    "Usage: splunk-profd [record] --pid PID [options]   sample, write a profile\n"
    "       splunk-profd dump --pid PID [--json]        every thread's stack, once\n"
    "       splunk-profd top --pid PID [--thread T]     live hottest functions\n"
    "       splunk-profd --watch [--allow R] [--deny R] daemon: every labelled process\n"
    "       splunk-profd COMMAND --help                 options of a command\n"
    "       splunk-profd --version\n"
    "\n"
    "An out-of-process CPU profiler: samples the threads of running processes\n"
    "from outside, without restarting or instrumenting them.  Python targets\n"
    "get merged Python and native stacks.  See splunk-profd(1).\n"
    "\n";

static const char record_text[] =
    "Usage: splunk-profd [record] --pid PID [--pid PID ...] [options]\n"
    "\n"
    "Samples the threads of running processes and writes a profile.\n"
    "\n"
    "  -p, --pid PID          process to profile (repeatable)\n"
    "  -o, --output FILE      write the profile at the end; the format follows the\n"
    "                         extension: .pb.gz pprof (also any other name),\n"
    "                         .txt collapsed stacks, .json speedscope, .svg flame graph\n"
    "  -f, --format FMT       pprof, collapsed, speedscope or svg (overrides the extension)\n"
    "  -d, --duration SEC     stop after SEC seconds (default: until Ctrl-C/SIGTERM)\n"
    "  -i, --interval MS      sampling period in ms (default: "
    "$SPLUNK_PROFILER_CALL_STACK_INTERVAL,\n"
    "                         else 1000; 10 = 100 Hz)\n"
    "      --stack-bytes N    stack bytes copied per thread-sample (4096..1048576, default 32768)\n"
    "      --max-depth N      frames kept per stack (1..4096, default 1024)\n"
    "      --wall             outputs show wall time (every sample: running, runnable,\n"
    "                         blocked) instead of CPU time\n"
    "      --native=MODE      Python targets: native frames kept next to Python frames:\n"
    "                         default (outside the interpreter), all, python-only\n"
    "      --endpoint URL     export to this OTLP/gRPC collector (http:// or https://);\n"
    "                         default $SPLUNK_PROFILER_LOGS_ENDPOINT, else http://localhost:4317\n"
    "      --no-export        never export, even when SPLUNK_PROFILER_ENABLED=true\n"
    "      --flush-interval MS  one Splunk record per target per MS (default: the\n"
    "                         interval, at least 1000)\n"
    "      --export-memory-mb N  memory for unsent records (8..4096, default 64);\n"
    "                         the oldest are dropped beyond it\n"
    "  -v, --verbose          more log lines (repeatable)\n"
    "  -h, --help             this text\n"
    "  -V, --version          version\n"
    "\n"
    "Daemon mode (instead of --pid):\n"
    "  -w, --watch            profile every labelled process (SPLUNK_PROFILER_ENABLED=true\n"
    "                         in its environment, a span-context segment, or --allow),\n"
    "                         and the children they fork, until SIGTERM\n"
    "      --allow RULE       also profile matching processes (repeatable; replaces\n"
    "                         $SPLUNK_PROFILER_WATCH_ALLOW)\n"
    "      --deny RULE        never profile matching processes (repeatable; replaces\n"
    "                         $SPLUNK_PROFILER_WATCH_DENY).  RULE: [!]exe:GLOB, uid:N,\n"
    "                         unit:GLOB, cgroup:GLOB, env:K=V\n"
    "      --config FILE      KEY=VALUE file, same names as the environment; the\n"
    "                         environment wins over it, flags over both; SIGHUP\n"
    "                         re-reads it (interval, rules, health interval)\n"
    "      --health-interval SEC  one health line every SEC s (default\n"
    "                         $SPLUNK_PROFILER_HEALTH_INTERVAL, else 60; 0: never)\n"
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
    "\n"
    "Export to Splunk is on with --endpoint, SPLUNK_PROFILER_LOGS_ENDPOINT or\n"
    "SPLUNK_PROFILER_ENABLED=true; off otherwise or with --no-export.\n"
    "\n"
    "Exit status: 0 done, 1 runtime failure (e.g. output not writable),\n"
    "2 usage error, 3 a target cannot be profiled.\n";

static const char dump_text[] =
    "Usage: splunk-profd dump --pid PID [--pid PID ...] [options]\n"
    "\n"
    "Prints every thread's current stack once: merged Python and native frames\n"
    "with file:line, thread name, OS thread id, Python thread id, state\n"
    "(running, or blocked and in which syscall) and trace/span ids when known.\n"
    "Each thread is stopped no longer than for one sample; blocked threads are\n"
    "not stopped at all.\n"
    "\n"
    "  -p, --pid PID          process to dump (repeatable)\n"
    "  -j, --json             one JSON document on stdout instead of text\n"
    "      --native=MODE      Python targets: default, all, python-only\n"
    "      --stack-bytes N    stack bytes copied per thread (4096..1048576, default 32768)\n"
    "      --max-depth N      frames kept per stack (1..4096, default 1024)\n"
    "  -v, --verbose          more log lines (repeatable)\n"
    "  -h, --help             this text\n"
    "\n"
    "Examples:\n"
    "  splunk-profd dump --pid 1234\n"
    "  splunk-profd dump --pid 1234 --json | jq '.processes[].threads[].name'\n"
    "\n"
    "Exit status: 0 done, 1 runtime failure, 2 usage error,\n"
    "3 a target cannot be profiled.\n";

static const char top_text[] =
    "Usage: splunk-profd top --pid PID [--pid PID ...] [options]\n"
    "\n"
    "A live view of the hottest functions (self % and total % of samples),\n"
    "refreshed every second.  Needs a terminal of at least 40x10.\n"
    "\n"
    "  -p, --pid PID          process to watch (repeatable)\n"
    "  -t, --thread T         only threads named T or with OS thread id T\n"
    "      --idle             also count blocked (idle) samples; default: running only\n"
    "  -i, --interval MS      sampling period in ms (default 10)\n"
    "      --native=MODE      Python targets: default, all, python-only\n"
    "      --stack-bytes N    stack bytes copied per thread-sample (default 32768)\n"
    "      --max-depth N      frames kept per stack (1..4096, default 1024)\n"
    "  -v, --verbose          more log lines (repeatable)\n"
    "  -h, --help             this text\n"
    "\n"
    "Keys: q or Ctrl-C quit; s sort by self, t by total, n by name;\n"
    "f next thread filter (cycles through the threads, then all);\n"
    "i toggle idle samples; r reset the counts.\n"
    "\n"
    "Examples:\n"
    "  splunk-profd top --pid 1234\n"
    "  splunk-profd top --pid 1234 --thread worker-1 --idle\n"
    "\n"
    "Exit status: 0 done, 1 runtime failure, 2 usage error,\n"
    "3 a target cannot be profiled.\n";

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

static bool apply_environment(const struct config_source *source, struct profd_config *config,
                              char *error, size_t error_size)
{
        const char *interval = config_source__get(source, "SPLUNK_PROFILER_CALL_STACK_INTERVAL");
        long long value;

        if (!apply_watch_environment(source, config, error, error_size))
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

enum {
        OPT_STACK_BYTES = 256,
        OPT_MAX_DEPTH,
        OPT_NATIVE,
        OPT_ENDPOINT,
        OPT_NO_EXPORT,
        OPT_FLUSH_INTERVAL,
        OPT_EXPORT_MEMORY,
        OPT_IDLE,
        OPT_ALLOW,
        OPT_DENY,
        OPT_CONFIG,
        OPT_HEALTH_INTERVAL,
        OPT_WALL,
};

static const struct option long_options[] = {
    {"pid", required_argument, NULL, 'p'},
    {"output", required_argument, NULL, 'o'},
    {"duration", required_argument, NULL, 'd'},
    {"interval", required_argument, NULL, 'i'},
    {"stack-bytes", required_argument, NULL, OPT_STACK_BYTES},
    {"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
    {"native", required_argument, NULL, OPT_NATIVE},
    {"endpoint", required_argument, NULL, OPT_ENDPOINT},
    {"no-export", no_argument, NULL, OPT_NO_EXPORT},
    {"flush-interval", required_argument, NULL, OPT_FLUSH_INTERVAL},
    {"export-memory-mb", required_argument, NULL, OPT_EXPORT_MEMORY},
    {"format", required_argument, NULL, 'f'},
    {"json", no_argument, NULL, 'j'},
    {"thread", required_argument, NULL, 't'},
    {"idle", no_argument, NULL, OPT_IDLE},
    {"wall", no_argument, NULL, OPT_WALL},
    {"watch", no_argument, NULL, 'w'},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"deny", required_argument, NULL, OPT_DENY},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"health-interval", required_argument, NULL, OPT_HEALTH_INTERVAL},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* The export flags; validated against the environment in cli__parse. */
static bool apply_export_option(int opt, const char *arg, struct export_config *config, char *error,
                                size_t error_size)
{
        long long value;

        switch (opt) {
        case OPT_ENDPOINT:
                config->endpoint_flag = arg;
                return true;
        case OPT_NO_EXPORT:
                config->no_export_flag = true;
                return true;
        case OPT_FLUSH_INTERVAL:
                if (parse_long(arg, 1, 300000, &value)) {
                        config->flush_interval_ms = value;
                        return true;
                }
                snprintf(error, error_size,
                         "--flush-interval %.64s: not a whole number of ms in 1..300000", arg);
                return false;
        default:
                if (parse_long(arg, EXPORT_MIN_MEMORY_MB, EXPORT_MAX_MEMORY_MB, &value)) {
                        config->memory_mb = value;
                        return true;
                }
                snprintf(error, error_size, "--export-memory-mb %.64s: not in %d..%d", arg,
                         EXPORT_MIN_MEMORY_MB, EXPORT_MAX_MEMORY_MB);
                return false;
        }
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

/* --format, --json, --thread, --idle. */
static bool apply_view_option(int opt, const char *arg, struct profd_config *config, char *error,
                              size_t error_size)
{
        switch (opt) {
        case 'f':
                if (parse_format(arg, &config->format)) {
                        config->format_given = true;
                        return true;
                }
                snprintf(error, error_size,
                         "--format %.64s: not one of pprof, collapsed, speedscope, svg", arg);
                return false;
        case 'j':
                config->json = true;
                return true;
        case 't':
                if (!*arg || strlen(arg) > 15) {
                        snprintf(error, error_size,
                                 "--thread: give a thread name (at most 15 characters) or id");
                        return false;
                }
                config->thread_filter = arg;
                return true;
        default:
                config->include_idle = true;
                return true;
        }
}

/* --watch, --allow, --deny, --config, --health-interval.  The first
 * --allow (--deny) replaces the environment's list. */
static bool apply_watch_option(int opt, const char *arg, struct profd_config *config,
                               bool *rules_given, char *error, size_t error_size)
{
        switch (opt) {
        case 'w':
                config->watch = true;
                return true;
        case OPT_ALLOW:
        case OPT_DENY: {
                bool deny = opt == OPT_DENY;
                struct watch_rule_list *list = deny ? &config->rules.deny : &config->rules.allow;
                if (!rules_given[deny])
                        list->n = 0;
                rules_given[deny] = true;
                return watch_rule_list__add(list, arg, deny ? "--deny" : "--allow", error,
                                            error_size);
        }
        case OPT_CONFIG:
                config->config_path = arg;
                return true;
        default:
                return parse_health_interval(arg, "--health-interval", &config->health_interval_s,
                                             error, error_size);
        }
}

/* Applies one parsed option.  Returns false with `error` set. */
static bool apply_option(int opt, const char *arg, struct profd_config *config, char *error,
                         size_t error_size)
{
        long long value;

        switch (opt) {
        case 'p':
                return add_pid(config, arg, error, error_size);
        case 'o':
                if (!*arg) {
                        snprintf(error, error_size, "--output: empty file name");
                        return false;
                }
                config->output = arg;
                return true;
        case 'd':
                if (parse_seconds(arg, &config->duration_s))
                        return true;
                snprintf(error, error_size, "--duration %.64s: not a positive number of seconds",
                         arg);
                return false;
        case 'i':
                if (parse_long(arg, 1, 3600000, &value)) {
                        config->interval_ms = value;
                        return true;
                }
                snprintf(error, error_size,
                         "--interval %.64s: not a whole number of ms in 1..3600000", arg);
                return false;
        case OPT_STACK_BYTES:
                if (parse_long(arg, 4096, 1 << 20, &value)) {
                        config->stack_bytes = (size_t)value;
                        return true;
                }
                snprintf(error, error_size, "--stack-bytes %.64s: not in 4096..1048576", arg);
                return false;
        case OPT_MAX_DEPTH:
                if (parse_long(arg, 1, 4096, &value)) {
                        config->max_depth = (size_t)value;
                        return true;
                }
                snprintf(error, error_size, "--max-depth %.64s: not in 1..4096", arg);
                return false;
        case OPT_NATIVE:
                if (strcmp(arg, "default") == 0)
                        config->native_mode = NATIVE_MODE_DEFAULT;
                else if (strcmp(arg, "all") == 0)
                        config->native_mode = NATIVE_MODE_ALL;
                else if (strcmp(arg, "python-only") == 0)
                        config->native_mode = NATIVE_MODE_PYTHON_ONLY;
                else {
                        snprintf(error, error_size,
                                 "--native %.64s: not one of default, all, python-only", arg);
                        return false;
                }
                return true;
        case 'v':
                config->verbosity++;
                return true;
        case 'f':
        case 'j':
        case 't':
        case OPT_IDLE:
                return apply_view_option(opt, arg, config, error, error_size);
        case OPT_WALL:
                config->wall = true; /* the outputs show wall time, not CPU */
                return true;
        case OPT_ENDPOINT:
        case OPT_NO_EXPORT:
        case OPT_FLUSH_INTERVAL:
        case OPT_EXPORT_MEMORY:
                return apply_export_option(opt, arg, &config->export, error, error_size);
        default:
                snprintf(error, error_size, "unknown option (see --help)");
                return false;
        }
}

/* Which options each subcommand accepts (getopt values; 0 ends). */
static const int record_options[] = {'p',
                                     'w',
                                     OPT_ALLOW,
                                     OPT_DENY,
                                     OPT_CONFIG,
                                     OPT_HEALTH_INTERVAL,
                                     'o',
                                     'd',
                                     'i',
                                     'f',
                                     'v',
                                     OPT_STACK_BYTES,
                                     OPT_MAX_DEPTH,
                                     OPT_NATIVE,
                                     OPT_ENDPOINT,
                                     OPT_NO_EXPORT,
                                     OPT_FLUSH_INTERVAL,
                                     OPT_EXPORT_MEMORY,
                                     OPT_WALL,
                                     0};
static const int dump_options[] = {'p', 'j', 'v', OPT_STACK_BYTES, OPT_MAX_DEPTH, OPT_NATIVE, 0};
static const int top_options[] = {'p',           'i',        't', 'v', OPT_IDLE, OPT_STACK_BYTES,
                                  OPT_MAX_DEPTH, OPT_NATIVE, 0};

struct command_spec {
        const char *name;
        enum profd_command command;
        const char *help;
        const int *options;
};

static const struct command_spec commands[] = {
    {"record", COMMAND_RECORD, record_text, record_options},
    {"dump", COMMAND_DUMP, dump_text, dump_options},
    {"top", COMMAND_TOP, top_text, top_options},
};

static bool command_accepts(const struct command_spec *spec, int opt)
{
        for (const int *o = spec->options; *o; o++)
                if (*o == opt)
                        return true;
        return false;
}

/* The subcommand named by argv[1], or record when argv[1] is an option
 * (or absent); NULL for an unknown word. */
static const struct command_spec *find_command(int argc, char **argv, int *first_option)
{
        *first_option = 1;
        if (argc < 2 || argv[1][0] == '-')
                return &commands[0];
        *first_option = 2;
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return &commands[i];
        if (strcmp(argv[1], "help") == 0) {
                *first_option = -1;
                return &commands[0];
        }
        return NULL;
}

static void print_help(const struct command_spec *spec, bool bare)
{
        /* `splunk-profd --help` shows the subcommands first, then record's
         * options (record is what a bare command line does). */
        if (bare)
                fputs(overview_text, stdout);
        fputs(spec->help, stdout);
}

static const char *lookup_config(void *source, const char *name)
{
        return config_source__get(source, name);
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
                /* The export variables, like the others, from the environment
                 * or (on reload) the --config file as it is now. */
                return export_config__resolve_from(&config->export, config->interval_ms,
                                                   lookup_config, (void *)source, error,
                                                   error_size);
        }
        return true;
}

static enum cli_result parse_options(int argc, char **argv, const struct command_spec *spec,
                                     bool bare, const struct config_source *source,
                                     struct profd_config *config, char *error, size_t error_size)
{
        bool interval_given = false, rules_given[2] = {false, false};
        int opt;

        while ((opt = getopt_long(argc, argv, "p:o:d:i:f:jt:vhVw", long_options, NULL)) != -1) {
                if (opt == 'h') {
                        print_help(spec, bare);
                        return CLI_EXIT_OK;
                }
                if (opt == 'V') {
                        printf("splunk-profd %s\n", PROFD_VERSION);
                        return CLI_EXIT_OK;
                }
                if (opt == '?' || opt == ':') {
                        snprintf(error, error_size,
                                 "%s: unknown option or missing value (see --help)",
                                 argv[optind - 1]);
                        return CLI_USAGE_ERROR;
                }
                if (!command_accepts(spec, opt)) {
                        snprintf(error, error_size,
                                 "%s: not an option of `%s` (see splunk-profd %s --help)",
                                 argv[optind - 1], spec->name, spec->name);
                        return CLI_USAGE_ERROR;
                }
                interval_given |= opt == 'i';
                if (opt == 'w' || opt == OPT_ALLOW || opt == OPT_DENY || opt == OPT_CONFIG ||
                    opt == OPT_HEALTH_INTERVAL) {
                        if (!apply_watch_option(opt, optarg, config, rules_given, error,
                                                error_size))
                                return CLI_USAGE_ERROR;
                } else if (!apply_option(opt, optarg, config, error, error_size)) {
                        return CLI_USAGE_ERROR;
                }
        }
        if (optind < argc) {
                snprintf(error, error_size, "unexpected argument '%.64s' (see --help)",
                         argv[optind]);
                return CLI_USAGE_ERROR;
        }
        if (config->watch && config->n_pids > 0) {
                snprintf(error, error_size, "--watch and --pid cannot be combined");
                return CLI_USAGE_ERROR;
        }
        if (config->n_pids == 0 && !config->watch) {
                snprintf(error, error_size, "no target: give --pid PID (see --help)");
                return CLI_USAGE_ERROR;
        }
        return finish_command(source, config, interval_given, error, error_size) ? CLI_RUN
                                                                                 : CLI_USAGE_ERROR;
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
        const struct command_spec *spec;
        int first;

        defaults(config);
        spec = find_command(argc, argv, &first);
        if (!spec) {
                snprintf(error, error_size,
                         "unknown command '%.64s': use record, dump or top (see --help)", argv[1]);
                return CLI_USAGE_ERROR;
        }
        if (first < 0) { /* `splunk-profd help` */
                print_help(spec, true);
                return CLI_EXIT_OK;
        }
        config->command = spec->command;
        /* The environment first, so that a flag given alongside it wins. */
        if (!apply_environment(source, config, error, error_size))
                return CLI_USAGE_ERROR;
        opterr = 0;
        optind = first;
        return parse_options(argc, argv, spec, first == 1, source, config, error, error_size);
}
