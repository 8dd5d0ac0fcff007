/* tui.h — just enough terminal handling for `top`, with ANSI escapes only
 * (every terminal emulator, tmux, screen and ssh understand them; no
 * ncurses dependency): raw keyboard input, the alternate screen, a hidden
 * cursor, and the window size.
 *
 * The terminal is restored on every way out: tui__leave() on the normal
 * path (q, Ctrl-C, SIGINT/SIGTERM/SIGHUP via the caller's signalfd, the
 * target exiting), and a fatal-signal handler for crashes (SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGQUIT) that restores it before the
 * default action runs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

struct tui {
        int in_fd, out_fd;
        struct termios saved;
        bool active;
        int rows, cols;
};

/* Enters raw mode and the alternate screen.  -ENOTTY when either fd is not
 * a terminal, else 0 or -errno. */
int tui__enter(struct tui *tui, int in_fd, int out_fd);
/* Leaves the alternate screen, shows the cursor, restores the termios.
 * Safe to call twice. */
void tui__leave(struct tui *tui);
/* Re-reads the window size (after SIGWINCH); defaults to 80x24. */
void tui__update_size(struct tui *tui);
/* Writes the whole buffer (a full frame, built by the caller). */
void tui__write(const struct tui *tui, const char *data, size_t len);
