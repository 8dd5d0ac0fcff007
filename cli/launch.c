/* launch.c — see launch.h. */
#include "cli/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/log.h"

/* Polling period while waiting for the command after the profile is
 * done (SIGCHLD is the tracer's, so it is not waited on here). */
#define WAIT_POLL_MS 50

static void close_fd(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* The child: only async-signal-safe calls between fork and exec. */
static __attribute__((noreturn)) void run_child(char *const *argv, int go_fd, int error_fd)
{
        sigset_t none;
        char go;
        ssize_t n;
        int error;

        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        do
                n = read(go_fd, &go, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1)
                _exit(127); /* splunk-profd gave up before the attach */
        execvp(argv[0], argv);
        error = errno;
        (void)!write(error_fd, &error, sizeof(error));
        _exit(127);
}

int launch__start(struct launch *launch, char *const *argv)
{
        int go[2], error[2];

        *launch = (struct launch){.go_fd = -1, .error_fd = -1};
        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(error, O_CLOEXEC) < 0) {
                int r = -errno;
                close(go[0]);
                close(go[1]);
                return r;
        }
        launch->pid = fork();
        if (launch->pid == 0)
                run_child(argv, go[0], error[1]);
        int r = launch->pid < 0 ? -errno : 0;
        close(go[0]);
        close(error[1]);
        if (r < 0) {
                launch->pid = 0;
                close(go[1]);
                close(error[0]);
                return r;
        }
        launch->go_fd = go[1];
        launch->error_fd = error[0];
        return 0;
}

int launch__exec_error(struct launch *launch, const char *name)
{
        int error = 0;
        ssize_t n;

        if (launch->error_fd < 0)
                return launch->exec_error;
        do
                n = read(launch->error_fd, &error, sizeof(error));
        while (n < 0 && errno == EINTR);
        close_fd(&launch->error_fd);
        launch->exec_error = n == (ssize_t)sizeof(error) ? (error > 0 ? error : EIO) : 0;
        if (launch->exec_error)
                log_error("cannot run %s: %s", name, strerror(launch->exec_error));
        return launch->exec_error;
}

void launch__forward_signal(const struct launch *launch, const struct signalfd_siginfo *info)
{
        bool from_terminal = info->ssi_code == SI_KERNEL;

        if (launch->pid <= 0)
                return;
        if (from_terminal && getpgid(launch->pid) == getpgrp())
                return;
        (void)kill(launch->pid, (int)info->ssi_signo);
}

int launch__wait(struct launch *launch, int signal_fd)
{
        struct pollfd pfd = {.fd = signal_fd, .events = POLLIN};
        struct signalfd_siginfo info;
        int status = 0;
        pid_t r;

        while ((r = waitpid(launch->pid, &status, WNOHANG)) == 0) {
                if (poll(&pfd, 1, WAIT_POLL_MS) > 0 &&
                    read(signal_fd, &info, sizeof(info)) == sizeof(info))
                        launch__forward_signal(launch, &info);
        }
        launch->pid = 0;
        return r > 0 ? status : -1;
}

int launch__exit_code(int wait_status)
{
        if (WIFSIGNALED(wait_status))
                return 128 + WTERMSIG(wait_status);
        return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1;
}

void launch__release(struct launch *launch)
{
        close_fd(&launch->go_fd);
        close_fd(&launch->error_fd);
}
