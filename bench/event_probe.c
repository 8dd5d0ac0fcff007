/* event_probe.c — a signal-heavy target that times its own ptrace events
 * (bench/event_latency.py, issue 20; tests/test_events.py).
 *
 * Usage: event_probe SECONDS [--wait-traced]
 *
 * A traced thread that takes a signal, creates a thread or forks waits in
 * a ptrace-stop until the tracer answers; untraced, each of these costs
 * microseconds.  So the time of each round trip, seen from inside, is how
 * long the tracer kept it waiting.  For SECONDS, every millisecond, one of:
 *   signal  raise(SIGUSR1) until it returns (the handler has run);
 *   clone   pthread_create() until it returns in the creator;
 *   thread  pthread_create() until the new thread's first instruction;
 *   fork    fork() until it returns in the parent;
 *   child   fork() until the child's first instruction;
 *   reap    the child's last instruction before _exit until waitpid
 *           returns (a traced child's exit is reported to its tracer
 *           first).
 * (per 50 rounds: 44 signals, 5 threads, 1 fork: ~20 forks a second, on
 * top of the churn the bench adds.)  Every 100 ms a burst of up to BURST
 * raise() calls in a row (5 ms at most) gives the signal throughput.
 * --wait-traced: first wait (up to 60 s) until a tracer has attached, then
 * one second more so that its own set-up of this process is over.
 * Prints one line: "op=name n= p50_us= p99_us= max_us=" per op, then
 * "raise_per_s=N", then "stalled_ms=S run_ms=R": S is the time spent in
 * rounds that took STALL_NS or more (a round waits while the tracer does
 * not answer, so S/R is the share of the run the tracer held the probe,
 * which a percentile of rounds understates: a long wait is one round). */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 200000
#define BURST       200
#define BURST_NS    (5 * 1000 * 1000)
#define STALL_NS    (10 * 1000 * 1000)

enum op { OP_SIGNAL, OP_CLONE, OP_THREAD, OP_FORK, OP_CHILD, OP_REAP, OP_COUNT };

static const char *const op_names[OP_COUNT] = {"signal", "clone", "thread",
                                               "fork",   "child", "reap"};

struct series {
        uint64_t *ns;
        size_t n;
};

static struct series series[OP_COUNT];
static volatile sig_atomic_t handled;

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void add(enum op op, uint64_t ns)
{
        if (series[op].n < MAX_SAMPLES)
                series[op].ns[series[op].n++] = ns;
}

static void on_usr1(int sig)
{
        (void)sig;
        handled++;
}

static void *thread_start(void *arg)
{
        *(uint64_t *)arg = now_ns();
        return NULL;
}

static void time_signal(void)
{
        uint64_t t0 = now_ns();

        raise(SIGUSR1);
        add(OP_SIGNAL, now_ns() - t0);
}

static void time_thread(void)
{
        uint64_t started = 0, t0 = now_ns(), t1;
        pthread_t thread;

        if (pthread_create(&thread, NULL, thread_start, &started) != 0)
                return;
        t1 = now_ns();
        pthread_join(thread, NULL);
        add(OP_CLONE, t1 - t0);
        add(OP_THREAD, started - t0);
}

/* stamps[0]: the child's first instruction, stamps[1]: its last. */
static void time_fork(volatile uint64_t *stamps)
{
        uint64_t t0 = now_ns(), t1, reaped;
        pid_t pid = fork();

        if (pid == 0) {
                stamps[0] = now_ns();
                stamps[1] = now_ns();
                _exit(0);
        }
        t1 = now_ns();
        if (pid < 0)
                return;
        waitpid(pid, NULL, 0);
        reaped = now_ns();
        add(OP_FORK, t1 - t0);
        add(OP_CHILD, stamps[0] - t0);
        add(OP_REAP, reaped - stamps[1]);
}

/* Signals a second in a burst of back-to-back raise() calls, cut short
 * after BURST_NS so that a slow tracer does not eat the rounds. */
static double burst_per_s(void)
{
        uint64_t t0 = now_ns(), t1 = t0;
        int i;

        for (i = 0; i < BURST && (t1 = now_ns()) - t0 < BURST_NS; i++)
                raise(SIGUSR1);
        return t1 > t0 ? i * 1e9 / (double)(t1 - t0) : 0;
}

static bool traced(void)
{
        char line[256];
        bool yes = false;
        FILE *f = fopen("/proc/self/status", "r");

        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "TracerPid:", 10) == 0)
                        yes = atoi(line + 10) != 0;
        if (f)
                fclose(f);
        return yes;
}

static int compare(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static void report(enum op op)
{
        struct series *s = &series[op];

        if (s->n == 0)
                return;
        qsort(s->ns, s->n, sizeof(s->ns[0]), compare);
        printf("op=%s n=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f\n", op_names[op], s->n,
               s->ns[s->n / 2] / 1e3, s->ns[s->n * 99 / 100] / 1e3, s->ns[s->n - 1] / 1e3);
}

int main(int argc, char **argv)
{
        double seconds = argc > 1 ? atof(argv[1]) : 10, per_s_sum = 0;
        bool wait_traced = argc > 2 && strcmp(argv[2], "--wait-traced") == 0;
        struct timespec ms = {.tv_nsec = 1000000};
        uint64_t start, end, next_burst, stalled_ns = 0;
        size_t bursts = 0;
        volatile uint64_t *stamps =
            mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

        if (stamps == MAP_FAILED)
                return 1;
        for (int op = 0; op < OP_COUNT; op++)
                if (!(series[op].ns = calloc(MAX_SAMPLES, sizeof(uint64_t))))
                        return 1;
        signal(SIGUSR1, on_usr1);
        if (wait_traced) {
                for (uint64_t give_up = now_ns() + 60000000000ull; !traced();)
                        if (now_ns() > give_up)
                                return 2;
                        else
                                nanosleep(&ms, NULL);
                sleep(1);
        }
        printf("ready\n");
        fflush(stdout);
        start = now_ns();
        end = start + (uint64_t)(seconds * 1e9);
        next_burst = now_ns();
        for (unsigned i = 0; now_ns() < end; i++) {
                uint64_t round_ns = now_ns();
                if (i % 10 == 3)
                        time_thread();
                else if (i % 50 == 8)
                        time_fork(stamps);
                else
                        time_signal();
                round_ns = now_ns() - round_ns;
                stalled_ns += round_ns >= STALL_NS ? round_ns : 0;
                if (now_ns() >= next_burst) {
                        per_s_sum += burst_per_s();
                        bursts++;
                        next_burst = now_ns() + 100000000u;
                }
                nanosleep(&ms, NULL);
        }
        for (int op = 0; op < OP_COUNT; op++)
                report(op);
        printf("raise_per_s=%.0f\n", bursts ? per_s_sum / (double)bursts : 0);
        printf("stalled_ms=%.0f run_ms=%.0f\n", stalled_ns / 1e6, (now_ns() - start) / 1e6);
        return handled > 0 ? 0 : 1;
}
