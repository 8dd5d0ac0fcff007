/* event_pump.c — see event_pump.h.
 *
 * Every ptrace event raises SIGCHLD, so without one pending nothing
 * happened since the last drain and waitpid is not called: with hundreds
 * of tracees each waitpid(-1) scans all of them.  The signal is consumed
 * before draining, so an event after the read raises a new one. */
#include "engine/event_pump.h"

#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "attach/ptrace_events.h"
#include "util/clock.h"
#include "util/log.h"

/* An answer later than this is logged (-vv) with what held it up: issue
 * 20 asks for 5 ms at p99. */
#define LATE_NS (5ull * 1000 * 1000)
/* A poll that took this long slept: SIGCHLD was not pending when it began
 * (it returns in a µs or two when it is), so what it finds came meanwhile. */
#define SLEPT_NS (20ull * 1000)

/* Consumes the pending SIGCHLD, if any.  SIGCHLD does not queue: one
 * read empties the signalfd. */
static bool take_sigchld(struct registry *registry)
{
        struct signalfd_siginfo info[4];

        return read(registry->sigchld_fd, info, sizeof(info)) > 0;
}

static uint64_t thread_cpu_ns(void)
{
        struct timespec cpu;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
        return (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
}

/* A look for events: nothing waits from here on; the gap's parts restart.
 * The CPU clock is a system call (the wall clock is not): not read while a
 * tick spins for its stops, so a gap's CPU may then count from an earlier
 * look, an upper bound. */
static void looked(struct registry *registry, uint64_t now_ns)
{
        struct event_lag *lag = &registry->event_lag;

        lag->checked_ns = lag->mark_ns = now_ns;
        lag->n_parts = 0;
        if (!registry->taking_stops)
                lag->cpu_at_check_ns = thread_cpu_ns();
}

/* The wall time since the last mark goes to the current label. */
static void close_part(struct event_lag *lag, uint64_t now_ns)
{
        size_t i = 0;

        while (i < lag->n_parts && lag->parts[i].label != lag->label)
                i++;
        if (i == lag->n_parts && lag->n_parts < EVENT_LAG_PARTS)
                lag->parts[lag->n_parts++] = (struct event_lag_part){.label = lag->label};
        if (i < lag->n_parts)
                lag->parts[i].wall_ns += now_ns - lag->mark_ns;
        lag->mark_ns = now_ns;
}

static void log_late(struct registry *registry, int handled, uint64_t now_ns)
{
        struct event_lag *lag = &registry->event_lag;
        char parts[512] = "";
        size_t at = 0;

        close_part(lag, now_ns);
        for (size_t i = 0; i < lag->n_parts && at < sizeof(parts); i++)
                at +=
                    (size_t)snprintf(parts + at, sizeof(parts) - at, "%s%s %llu us", i ? ", " : "",
                                     lag->parts[i].label ? lag->parts[i].label : "idle",
                                     (unsigned long long)lag->parts[i].wall_ns / 1000);
        log_debug("events: %d answered up to %llu us late (tracer CPU meanwhile %llu us); by step: "
                  "%s",
                  handled, (unsigned long long)(now_ns - lag->checked_ns) / 1000,
                  (unsigned long long)(thread_cpu_ns() - lag->cpu_at_check_ns) / 1000, parts);
}

int event_pump__collect(struct registry *registry)
{
        uint64_t now = monotonic_ns(), since = registry->event_lag.checked_ns;
        int handled = ptrace_events__drain(&registry->targets, registry->event_handlers, registry,
                                           &registry->events);

        /* The gap since the last look bounds how long these events waited. */
        if (handled > 0 && since && now - since >= LATE_NS)
                log_late(registry, handled, now);
        looked(registry, monotonic_ns());
        return handled;
}

void event_pump__idle(struct registry *registry)
{
        registry->event_lag.label = NULL;
        looked(registry, monotonic_ns());
}

void event_pump__busy(struct registry *registry, const char *what)
{
        close_part(&registry->event_lag, monotonic_ns());
        registry->event_lag.label = what;
}

void event_pump__after_sleep(struct registry *registry, uint64_t slept_since_ns)
{
        uint64_t now = monotonic_ns();

        if (now - slept_since_ns >= SLEPT_NS)
                looked(registry, now);
}

void event_pump__wait(struct registry *registry, uint64_t timeout_ns)
{
        struct pollfd pfd = {.fd = registry->sigchld_fd, .events = POLLIN};
        struct timespec timeout = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
                                   .tv_nsec = (long)(timeout_ns % 1000000000u)};
        uint64_t before = timeout_ns ? monotonic_ns() : 0;

        if (timeout_ns) {
                int ready = ppoll(&pfd, 1, &timeout, NULL);
                event_pump__after_sleep(registry, before);
                if (ready <= 0)
                        return;
        }
        if (take_sigchld(registry))
                (void)event_pump__collect(registry);
        else /* none pending: none waited */
                looked(registry, monotonic_ns());
}

void event_pump__drain(struct registry *registry)
{
        (void)take_sigchld(registry);
        (void)event_pump__collect(registry);
}
