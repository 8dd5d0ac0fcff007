/* tui.c — see tui.h.
 *
 * Frames are drawn by the caller as one buffer: cursor home, each line
 * followed by "erase to end of line", then "erase below".  Nothing is ever
 * written in the last column, so no terminal auto-wraps and scrolls.
 *
 * The one static: a crash handler cannot be given an argument, yet must
 * know which terminal to restore and how.  `emergency` holds a copy of the
 * saved termios and the fd, written before the handler is installed and
 * cleared when the terminal is restored normally; the handler uses only
 * async-signal-safe calls (write, tcsetattr, sigaction, raise).  There is
 * only one controlling terminal per process, so one slot is enough. */
#include "cli/tui.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define ENTER_SEQUENCE "\033[?1049h\033[?25l\033[H\033[2J"
#define LEAVE_SEQUENCE "\033[?25h\033[?1049l"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGQUIT};

static struct {
        volatile sig_atomic_t armed;
        int fd;
        struct termios saved;
} emergency;

static void write_all(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, data, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return;
                data += n;
                len -= (size_t)n;
        }
}

static void on_fatal_signal(int signo)
{
        if (emergency.armed) {
                emergency.armed = 0;
                write_all(emergency.fd, LEAVE_SEQUENCE, sizeof(LEAVE_SEQUENCE) - 1);
                tcsetattr(emergency.fd, TCSAFLUSH, &emergency.saved);
        }
        signal(signo, SIG_DFL);
        raise(signo);
}

static void install_fatal_handlers(void)
{
        struct sigaction action;

        memset(&action, 0, sizeof(action));
        action.sa_handler = on_fatal_signal;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESETHAND;
        for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
                sigaction(fatal_signals[i], &action, NULL);
}

void tui__update_size(struct tui *tui)
{
        struct winsize size;

        tui->rows = 24;
        tui->cols = 80;
        if (ioctl(tui->out_fd, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 && size.ws_col > 0) {
                tui->rows = size.ws_row;
                tui->cols = size.ws_col;
        }
}

int tui__enter(struct tui *tui, int in_fd, int out_fd)
{
        struct termios raw;

        memset(tui, 0, sizeof(*tui));
        tui->in_fd = in_fd;
        tui->out_fd = out_fd;
        if (!isatty(in_fd) || !isatty(out_fd))
                return -ENOTTY;
        if (tcgetattr(in_fd, &tui->saved) < 0)
                return -errno;
        emergency.fd = in_fd;
        emergency.saved = tui->saved;
        emergency.armed = 1;
        install_fatal_handlers();
        raw = tui->saved;
        /* No echo, no line editing, no signals from keys (Ctrl-C arrives
         * as byte 3 and is handled as "quit"), no CR/NL translation on input. */
        raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | ISIG | IEXTEN);
        raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR | IGNCR);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(in_fd, TCSAFLUSH, &raw) < 0) {
                emergency.armed = 0;
                return -errno;
        }
        tui->active = true;
        write_all(out_fd, ENTER_SEQUENCE, sizeof(ENTER_SEQUENCE) - 1);
        tui__update_size(tui);
        return 0;
}

void tui__leave(struct tui *tui)
{
        if (!tui->active)
                return;
        tui->active = false;
        emergency.armed = 0;
        write_all(tui->out_fd, LEAVE_SEQUENCE, sizeof(LEAVE_SEQUENCE) - 1);
        tcsetattr(tui->in_fd, TCSAFLUSH, &tui->saved);
}

void tui__write(const struct tui *tui, const char *data, size_t len)
{
        write_all(tui->out_fd, data, len);
}
