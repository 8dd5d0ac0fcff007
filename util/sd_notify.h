/* sd_notify.h — the systemd notification protocol, without libsystemd.
 *
 * One datagram of "KEY=VALUE\n" lines to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace), as
 * sd_notify(3) describes.  libsystemd is not linked: the protocol is one
 * sendto(), and the daemon then runs (and is tested) on hosts without it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Sends `state` (e.g. "READY=1") when $NOTIFY_SOCKET is set.  1 sent,
 * 0 no socket configured, -errno on failure. */
int sd_notify__send(const char *state);

/* $WATCHDOG_USEC when set and meant for this process ($WATCHDOG_PID
 * absent or ours), else 0. */
uint64_t sd_notify__watchdog_usec(void);
