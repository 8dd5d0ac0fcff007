/* cli.c — command line and environment for `splunk-profd --pid N ...`.
 *
 * Every value is validated here, with a one-line reason on failure, so the
 * rest of the program can trust the config.  Numbers must be whole (no
 * trailing junk) and inside documented ranges. */
#include "daemon/config.h"
#include "unwind/stack_merge.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_INTERVAL_MS 1000
#define DEFAULT_STACK_BYTES (32 * 1024)
#define DEFAULT_MAX_DEPTH   1024

static const char usage_text[] =
    "Usage: splunk-profd --pid PID [--pid PID ...] [options]\n"
    "\n"
    "Samples the threads of running processes from outside, without\n"
    "restarting or instrumenting them, and writes a pprof profile.\n"
    "\n"
    "  -p, --pid PID          process to profile (repeatable)\n"
    "  -o, --output FILE      write a gzip pprof profile (.pb.gz) at the end\n"
    "  -d, --duration SEC     stop after SEC seconds (default: until Ctrl-C/SIGTERM)\n"
    "  -i, --interval MS      sampling period in ms (default: "
    "$SPLUNK_PROFILER_CALL_STACK_INTERVAL,\n"
    "                         else 1000; 10 = 100 Hz)\n"
    "      --stack-bytes N    stack bytes copied per thread-sample (4096..1048576, default 32768)\n"
    "      --max-depth N      frames kept per stack (1..4096, default 1024)\n"
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
    "Example:\n"
    "  splunk-profd --pid 1234 --interval 10 --duration 30 --output cpu.pb.gz\n"
    "  go tool pprof -top cpu.pb.gz\n"
    "  splunk-profd --pid 1234 --endpoint http://localhost:4317\n"
    "\n"
    "Export to Splunk is on with --endpoint, SPLUNK_PROFILER_LOGS_ENDPOINT or\n"
    "SPLUNK_PROFILER_ENABLED=true; off otherwise or with --no-export.\n"
    "\n"
    "Exit status: 0 done, 1 runtime failure (e.g. output not writable),\n"
    "2 usage error, 3 a target cannot be profiled.\n";

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
}

static bool apply_environment(struct profd_config *config, char *error, size_t error_size)
{
        const char *interval = getenv("SPLUNK_PROFILER_CALL_STACK_INTERVAL");
        long long value;

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

enum cli_result cli__parse(int argc, char **argv, struct profd_config *config, char *error,
                           size_t error_size)
{
        int opt;

        defaults(config);
        /* The environment first, so that a flag given alongside it wins. */
        if (!apply_environment(config, error, error_size))
                return CLI_USAGE_ERROR;
        opterr = 0;
        while ((opt = getopt_long(argc, argv, "p:o:d:i:vhV", long_options, NULL)) != -1) {
                if (opt == 'h') {
                        fputs(usage_text, stdout);
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
                if (!apply_option(opt, optarg, config, error, error_size))
                        return CLI_USAGE_ERROR;
        }
        if (optind < argc) {
                snprintf(error, error_size, "unexpected argument '%.64s' (see --help)",
                         argv[optind]);
                return CLI_USAGE_ERROR;
        }
        if (config->n_pids == 0) {
                snprintf(error, error_size, "no target: give --pid PID (see --help)");
                return CLI_USAGE_ERROR;
        }
        if (!export_config__resolve(&config->export, config->interval_ms, error, error_size))
                return CLI_USAGE_ERROR;
        return CLI_RUN;
}
