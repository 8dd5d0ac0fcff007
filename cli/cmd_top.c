/* cmd_top.c — see cmd_top.h.
 *
 * Order of events: start the tracer and wait until it has attached (an
 * attach error is then printed on the normal screen, not inside the
 * alternate one), enter the terminal UI, loop on poll() over the keyboard,
 * the signalfd (quit signals and SIGWINCH), a one-second timerfd and the
 * tracer's done eventfd; on the way out always stop and join the tracer and
 * leave the UI before printing anything.
 *
 * The view (at least 40x10, fits 80x24):
 *
 *   splunk-profd top  pid 1234 (app)  100 Hz  samples 5000  threads 3
 *   thread: all  running only  sort: %own   q quit  s/t/o/c/n sort ...
 *
 *     %Own %Total  OwnTime TotTime  Function (file)
 *    97.0%  97.0%    4.85s   4.85s  lib_spin (testlib.c)
 *
 * %Own/%Total are over the last second (the window), the times over the
 * whole run (or since r). */
#include "cli/cmd_top.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "cli/top_table.h"
#include "engine/run_status.h"
#include "engine/tracer.h"
#include "cli/tui.h"
#include "util/cleanup.h"
#include "util/log.h"

#define HEADER_LINES 4
#define MIN_ROWS     10
#define MIN_COLS     40

enum sort_key { SORT_OWN, SORT_TOTAL, SORT_OWN_ALL, SORT_TOTAL_ALL, SORT_NAME };

static const char *const sort_names[] = {"%own", "%total", "own time", "total time", "name"};

struct top_view {
        struct top_table table;
        struct top_filter filter;
        enum sort_key sort;
        struct tui tui;
        const struct registry *registry; /* config and descriptors only: the
                                          * tracer's state comes by `status` */
        struct run_status status;        /* the tracer's newest */
        size_t thread_cursor;            /* f: 0 = all, i = the i-th known thread */
        bool quit;
};

/* ------------------------------------------------------------ drawing */

static int compare_u64_desc(uint64_t a, uint64_t b)
{
        return a < b ? 1 : a > b ? -1 : 0;
}

static int compare_rows(const void *pa, const void *pb, void *context)
{
        const struct top_row *a = pa, *b = pb;
        enum sort_key key = *(const enum sort_key *)context;
        int c = 0;

        switch (key) {
        case SORT_OWN:
                c = compare_u64_desc(a->window.self, b->window.self);
                break;
        case SORT_TOTAL:
                c = compare_u64_desc(a->window.total, b->window.total);
                break;
        case SORT_OWN_ALL:
                c = compare_u64_desc(a->all.self, b->all.self);
                break;
        case SORT_TOTAL_ALL:
                c = compare_u64_desc(a->all.total, b->all.total);
                break;
        case SORT_NAME:
                break;
        }
        if (c == 0 && key != SORT_NAME)
                c = compare_u64_desc(a->all.total, b->all.total);
        return c ? c : strcmp(a->function, b->function);
}

static void sort_rows(struct top_row *rows, size_t n, enum sort_key key)
{
        if (rows)
                qsort_r(rows, n, sizeof(*rows), compare_rows, &key);
}

/* Appends one screen line, cut to the width, then "erase to end of line". */
static void put_line(FILE *out, int cols, const char *text)
{
        int width = cols - 1; /* never the last column: no auto-wrap */

        fprintf(out, "%.*s\033[K\r\n", width > 0 ? width : 0, text);
}

static double percent(uint64_t part, uint64_t whole)
{
        return whole ? 100.0 * (double)part / (double)whole : 0;
}

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

static void filter_label(const struct top_view *view, char *out, size_t size)
{
        if (view->filter.tid == 0) {
                snprintf(out, size, "all");
                return;
        }
        snprintf(out, size, "%d", (int)view->filter.tid);
        for (size_t i = 0; i < view->table.n_threads; i++)
                if (view->table.threads[i].tid == view->filter.tid)
                        snprintf(out, size, "%s (%d)", view->table.threads[i].name,
                                 (int)view->filter.tid);
}

static void draw_header(const struct top_view *view, FILE *out, const uint64_t samples[2])
{
        const struct registry *registry = view->registry;
        const struct run_status *status = &view->status;
        char line[512], filter[64];

        snprintf(line, sizeof(line),
                 "splunk-profd top  pid %d (%s)%s  %lld Hz  samples %llu  threads %zu",
                 (int)status->first_pid, status->first_pid ? status->first_comm : "?",
                 registry->config.n_pids > 1 ? " +more" : "",
                 (long long)(1000 / registry->config.interval_ms), (unsigned long long)samples[1],
                 view->table.n_threads);
        put_line(out, view->tui.cols, line);
        filter_label(view, filter, sizeof(filter));
        snprintf(line, sizeof(line),
                 "thread: %s  %s  sort: %s   q quit s/t/o/c/n sort f thread i idle r reset", filter,
                 view->filter.include_idle ? "running+idle" : "running only",
                 sort_names[view->sort]);
        put_line(out, view->tui.cols, line);
        put_line(out, view->tui.cols, "");
        put_line(out, view->tui.cols, "   %Own %Total  OwnTime  TotTime  Function (file)");
}

static void draw_row(const struct top_view *view, FILE *out, const struct top_row *row,
                     const uint64_t samples[2])
{
        double seconds = (double)view->registry->config.interval_ms / 1000.0;
        char line[1024], where[512] = "";

        if (*row->file)
                snprintf(where, sizeof(where), " (%s)", base_name(row->file));
        snprintf(line, sizeof(line), " %5.1f%% %5.1f%% %7.2fs %7.2fs  %s%s",
                 percent(row->window.self, samples[0]), percent(row->window.total, samples[0]),
                 (double)row->all.self * seconds, (double)row->all.total * seconds, row->function,
                 where);
        put_line(out, view->tui.cols, line);
}

static void draw(struct top_view *view)
{
        _cleanup_free_ char *frame = NULL;
        _cleanup_free_ struct top_row *rows = NULL;
        size_t size = 0, n = 0;
        uint64_t samples[2];
        FILE *out = open_memstream(&frame, &size);

        if (!out)
                return;
        fputs("\033[H", out);
        top_table__lock(&view->table);
        rows = top_table__rows(&view->table, &view->filter, &n, samples);
        sort_rows(rows, n, view->sort);
        if (view->tui.rows < MIN_ROWS || view->tui.cols < MIN_COLS) {
                put_line(out, view->tui.cols, "terminal too small (need 40x10); q quits");
        } else {
                draw_header(view, out, samples);
                for (size_t i = 0; i < n && (int)i < view->tui.rows - HEADER_LINES - 1; i++)
                        draw_row(view, out, &rows[i], samples);
                if (n == 0)
                        put_line(out, view->tui.cols,
                                 view->filter.include_idle ? "  (no samples yet)"
                                                           : "  (no running samples yet; i "
                                                             "shows idle threads)");
        }
        top_table__next_window(&view->table);
        top_table__unlock(&view->table);
        fputs("\033[J", out);
        if (fclose(out) == 0)
                tui__write(&view->tui, frame, size);
}

/* ------------------------------------------------------------ input */

/* f: all threads -> each known thread in turn -> all. */
static void next_thread_filter(struct top_view *view)
{
        top_table__lock(&view->table);
        view->thread_cursor = (view->thread_cursor + 1) % (view->table.n_threads + 1);
        view->filter.tid =
            view->thread_cursor ? view->table.threads[view->thread_cursor - 1].tid : 0;
        top_table__unlock(&view->table);
}

static void handle_key(struct top_view *view, char key)
{
        switch (key) {
        case 'q':
        case 'Q':
        case 3 /* Ctrl-C */:
        case 4 /* Ctrl-D */:
                view->quit = true;
                break;
        case 's':
                view->sort = SORT_OWN;
                break;
        case 't':
                view->sort = SORT_TOTAL;
                break;
        case 'o':
                view->sort = SORT_OWN_ALL;
                break;
        case 'c':
                view->sort = SORT_TOTAL_ALL;
                break;
        case 'n':
                view->sort = SORT_NAME;
                break;
        case 'f':
                next_thread_filter(view);
                break;
        case 'i':
                view->filter.include_idle = !view->filter.include_idle;
                break;
        case 'r':
                top_table__lock(&view->table);
                top_table__reset(&view->table);
                top_table__unlock(&view->table);
                break;
        default:
                return;
        }
        if (!view->quit)
                draw(view);
}

static void read_keys(struct top_view *view)
{
        char keys[64];
        ssize_t n = read(view->tui.in_fd, keys, sizeof(keys));

        if (n == 0)
                view->quit = true; /* the terminal went away */
        for (ssize_t i = 0; i < n && !view->quit; i++)
                handle_key(view, keys[i]);
}

static void read_signal(struct top_view *view, int signal_fd)
{
        struct signalfd_siginfo info;

        if (read(signal_fd, &info, sizeof(info)) != sizeof(info))
                return;
        if (info.ssi_signo == SIGWINCH) {
                tui__update_size(&view->tui);
                draw(view);
        } else if (info.ssi_signo == SIGTSTP || info.ssi_signo == SIGTTIN ||
                   info.ssi_signo == SIGTTOU) {
                /* Stopping would hold the targets (cli/main.c); top has its
                 * own terminal, so it simply does not stop. */
        } else {
                view->quit = true;
        }
}

/* ------------------------------------------------------------ run */

/* Waits for the tracer's first report: 1 attached, 2 finished (failed). */
static uint64_t wait_attached(struct registry *registry, int signal_fd)
{
        struct pollfd fds[2] = {
            {.fd = registry->done_fd, .events = POLLIN},
            {.fd = signal_fd, .events = POLLIN},
        };
        uint64_t value = 0, one = 1;
        struct signalfd_siginfo info;

        while (value == 0) {
                if (poll(fds, 2, -1) < 0 && errno != EINTR)
                        return 2;
                if ((fds[1].revents & POLLIN) &&
                    read(signal_fd, &info, sizeof(info)) == sizeof(info) &&
                    info.ssi_signo != SIGWINCH)
                        (void)!write(registry->stop_fd, &one, sizeof(one));
                if ((fds[0].revents & POLLIN) &&
                    read(registry->done_fd, &value, sizeof(value)) != sizeof(value))
                        value = 0;
        }
        return value;
}

static void ui_loop(struct top_view *view, struct registry *registry, int signal_fd)
{
        _cleanup_close_ int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        struct itimerspec second = {.it_interval = {1, 0}, .it_value = {1, 0}};
        struct pollfd fds[4] = {
            {.fd = view->tui.in_fd, .events = POLLIN},
            {.fd = signal_fd, .events = POLLIN},
            {.fd = timer_fd, .events = POLLIN},
            {.fd = registry->done_fd, .events = POLLIN},
        };
        uint64_t value;

        if (timer_fd < 0 || timerfd_settime(timer_fd, 0, &second, NULL) < 0)
                return;
        draw(view);
        while (!view->quit) {
                if (poll(fds, 4, -1) < 0 && errno != EINTR)
                        return;
                if (fds[0].revents & (POLLIN | POLLHUP | POLLERR))
                        read_keys(view);
                if (fds[1].revents & POLLIN)
                        read_signal(view, signal_fd);
                if ((fds[2].revents & POLLIN) && read(timer_fd, &value, sizeof(value)) > 0 &&
                    !view->quit) {
                        (void)mailbox__receive(&registry->status, &view->status);
                        draw(view);
                }
                if (fds[3].revents & POLLIN)
                        view->quit = true; /* every target exited */
        }
}

static int top_view__start(struct top_view *view, struct registry *registry, struct launch *launch)
{
        if (launch && launch__exec_error(launch, registry->config.command_argv[0]))
                return EXIT_USAGE;
        /* The tracer sent its first status before saying it had attached. */
        (void)mailbox__receive(&registry->status, &view->status);
        view->filter.include_idle = registry->config.include_idle;
        if (registry->config.thread_filter) {
                view->filter.tid = view->status.thread_filter_tid;
                if (view->filter.tid < 0) {
                        log_error("--thread %s: no such thread in the target",
                                  registry->config.thread_filter);
                        return EXIT_USAGE;
                }
        }
        int r = tui__enter(&view->tui, STDIN_FILENO, STDOUT_FILENO);
        if (r < 0) {
                log_error("top needs a terminal on stdin and stdout: %s", strerror(-r));
                return r == -ENOTTY ? EXIT_USAGE : EXIT_RUNTIME;
        }
        return 0;
}

int cmd_top__run(struct registry *registry, int signal_fd, struct launch *launch)
{
        struct top_view view = {.registry = registry};
        uint64_t one = 1;
        pthread_t tracer;
        int status = 0;

        if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
                log_error("top needs a terminal on stdin and stdout");
                return EXIT_USAGE;
        }
        if (top_table__init(&view.table) < 0)
                return EXIT_RUNTIME;
        registry->sink =
            (struct sample_sink){.on_sample = top_table__on_sample, .arg = &view.table};
        if (pthread_create(&tracer, NULL, tracer__main, registry) != 0) {
                log_error("cannot start the tracer thread");
                top_table__release(&view.table);
                return EXIT_RUNTIME;
        }
        if (wait_attached(registry, signal_fd) == 1) {
                status = top_view__start(&view, registry, launch);
                if (status == 0)
                        ui_loop(&view, registry, signal_fd);
        }
        (void)!write(registry->stop_fd, &one, sizeof(one));
        pthread_join(tracer, NULL);
        tui__leave(&view.tui);
        tracer__warn_if_behind(registry);
        if (registry->attach_error) {
                log_error("%s", registry->attach_why);
                status = registry->attach_exit_code;
        } else if (target_set__live_count(&registry->targets) == 0) {
                log_info("every target exited");
        }
        if (view.table.out_of_memory)
                log_warning("out of memory: some samples were not counted");
        top_table__release(&view.table);
        return status;
}
