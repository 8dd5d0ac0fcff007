/* maps_reader.c — see maps_reader.h. */
#include "symbolize/maps_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "symbolize/proc_maps.h"
#include "util/cleanup.h"
#include "util/log.h"

struct maps_request {
        pid_t pid;
        int what;
        uint64_t serial;
};

/* The first MAPS_READER_ENVIRON_MAX bytes of /proc/`pid`/environ. */
static int read_environ(pid_t pid, char **text, size_t *len)
{
        _cleanup_free_ char *buf = malloc(MAPS_READER_ENVIRON_MAX);
        _cleanup_close_ int fd = -1;
        char path[64];
        ssize_t n;

        *len = 0;
        if (!buf)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while (*len < MAPS_READER_ENVIRON_MAX &&
               (n = read(fd, buf + *len, MAPS_READER_ENVIRON_MAX - *len)) > 0)
                *len += (size_t)n;
        *text = take_ptr(buf);
        return 0;
}

static void close_pair(int fds[2])
{
        for (int i = 0; i < 2; i++) {
                if (fds[i] >= 0)
                        close(fds[i]);
                fds[i] = -1;
        }
}

/* The worker: one request at a time until the tracer closes its end.  A
 * reply the full pipe refuses is dropped with its text. */
static void *maps_reader__main(void *arg)
{
        struct maps_reader *reader = arg;
        struct maps_request request;

        for (;;) {
                ssize_t n = read(reader->request_fd[0], &request, sizeof(request));
                struct maps_reply reply = {0};

                if (n < 0 && errno == EINTR)
                        continue;
                if (n != sizeof(request))
                        break; /* 0: the tracer closed its end */
                reply.pid = request.pid;
                reply.what = request.what;
                reply.serial = request.serial;
                reply.error = request.what == MAPS_READER_ENVIRON
                                  ? read_environ(request.pid, &reply.text, &reply.len)
                                  : proc_maps__read(request.pid, &reply.text, &reply.len);
                if (write(reader->reply_fd[1], &reply, sizeof(reply)) != sizeof(reply))
                        free(reply.text);
        }
        return NULL;
}

/* Requests: the worker's end blocks, the tracer's does not.  Replies: the
 * worker's end does not block, and the tracer's does not either. */
static int open_pipes(struct maps_reader *reader)
{
        if (pipe2(reader->request_fd, O_CLOEXEC) < 0 ||
            fcntl(reader->request_fd[1], F_SETFL, O_NONBLOCK) < 0 ||
            pipe2(reader->reply_fd, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int maps_reader__start(struct maps_reader *reader)
{
        sigset_t all, old;
        int r;

        *reader = (struct maps_reader)MAPS_READER_INIT;
        r = open_pipes(reader);
        if (r < 0) {
                maps_reader__stop(reader);
                return log_warning_errno(r, "cannot create the maps reader's pipes");
        }
        /* Signals stay with the threads that handle them (signalfd). */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = -pthread_create(&reader->thread, NULL, maps_reader__main, reader);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                maps_reader__stop(reader);
                return log_warning_errno(r, "cannot start the maps reader");
        }
        reader->running = true;
        return 0;
}

void maps_reader__stop(struct maps_reader *reader)
{
        struct maps_reply reply;

        if (reader->request_fd[1] >= 0)
                close(reader->request_fd[1]); /* the worker's read returns 0 */
        reader->request_fd[1] = -1;
        if (reader->running)
                pthread_join(reader->thread, NULL);
        reader->running = false;
        while (maps_reader__take(reader, &reply))
                free(reply.text);
        close_pair(reader->request_fd);
        close_pair(reader->reply_fd);
}

bool maps_reader__ask(struct maps_reader *reader, pid_t pid, uint64_t serial)
{
        return maps_reader__ask_for(reader, pid, serial, MAPS_READER_MAPS);
}

bool maps_reader__ask_for(struct maps_reader *reader, pid_t pid, uint64_t serial, int what)
{
        struct maps_request request = {.pid = pid, .what = what, .serial = serial};

        if (!reader->running)
                return false;
        return write(reader->request_fd[1], &request, sizeof(request)) == sizeof(request);
}

int maps_reader__fd(const struct maps_reader *reader)
{
        return reader->running ? reader->reply_fd[0] : -1;
}

bool maps_reader__take(struct maps_reader *reader, struct maps_reply *reply)
{
        if (reader->reply_fd[0] < 0)
                return false;
        return read(reader->reply_fd[0], reply, sizeof(*reply)) == sizeof(*reply);
}
