/* event_pump.c — see event_pump.h.
 *
 * Every ptrace event raises SIGCHLD, so without one pending nothing
 * happened since the last drain and waitpid is not called: with hundreds
 * of tracees each waitpid(-1) scans all of them.  The signal is consumed
 * before draining, so an event after the read raises a new one. */
#include "engine/event_pump.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "attach/ptrace_events.h"

/* Consumes the pending SIGCHLD, if any.  SIGCHLD does not queue: one
 * read empties the signalfd. */
static bool take_sigchld(struct registry *registry)
{
        struct signalfd_siginfo info[4];

        return read(registry->sigchld_fd, info, sizeof(info)) > 0;
}

int event_pump__collect(struct registry *registry)
{
        return ptrace_events__drain(&registry->targets, registry->event_handlers, registry,
                                    &registry->events);
}

void event_pump__wait(struct registry *registry, uint64_t timeout_ns)
{
        struct pollfd pfd = {.fd = registry->sigchld_fd, .events = POLLIN};
        struct timespec timeout = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
                                   .tv_nsec = (long)(timeout_ns % 1000000000u)};

        if (timeout_ns && ppoll(&pfd, 1, &timeout, NULL) <= 0)
                return;
        if (take_sigchld(registry))
                (void)event_pump__collect(registry);
}

void event_pump__drain(struct registry *registry)
{
        (void)take_sigchld(registry);
        (void)event_pump__collect(registry);
}
