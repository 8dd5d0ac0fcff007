/* launch.h — `-- COMMAND [ARGS...]`: the command is forked at once but
 * waits, before its exec, until the tracer has seized it; so the profile
 * covers the program from its first instruction.  The child shares our
 * terminal, standard streams and process group (Ctrl-C reaches it as it
 * would without us); it gets a clean signal mask and SIGPIPE back.
 *
 * The handshake is two pipes: one byte on `go` lets the child exec (the
 * tracer writes it, engine/subprocesses.c); EOF on `go` makes it exit 127
 * without running anything.  A failed exec writes its errno to `error`,
 * whose write end is close-on-exec: EOF there means the exec worked. */
#pragma once

#include <stdbool.h>
#include <sys/signalfd.h>
#include <sys/types.h>

struct launch {
        pid_t pid;      /* 0: nothing started */
        int go_fd;      /* our end of `go`, -1 once handed on or closed */
        int error_fd;   /* our end of `error`, -1 once read */
        int exec_error; /* errno of a failed exec, once known; 0: none */
};

/* Forks the child for `argv` (NULL-terminated).  0 or -errno. */
int launch__start(struct launch *launch, char *const *argv);

/* Once the child was let go (never before: this waits for its exec): 0
 * when it runs the command, else the exec's errno, after a one-line
 * error naming `name`; the child then exits 127.  The first call reads
 * it, later ones repeat it. */
int launch__exec_error(struct launch *launch, const char *name);

/* Passes a SIGINT/SIGTERM/SIGHUP sent to splunk-profd on to the command,
 * as a terminal would; one the terminal sent to our whole foreground
 * process group the command has received itself, and is not sent twice. */
void launch__forward_signal(const struct launch *launch, const struct signalfd_siginfo *info);

/* Waits for the command to exit (it is not traced any more), passing on
 * the signals read from `signal_fd` meanwhile.  Its wait status, or -1
 * when it cannot be waited for. */
int launch__wait(struct launch *launch, int signal_fd);

/* The shell's convention: the exit status, or 128+N after signal N. */
int launch__exit_code(int wait_status);

/* Closes what is left; the child, if still waiting for `go`, exits. */
void launch__release(struct launch *launch);
