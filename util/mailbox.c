/* mailbox.c — see mailbox.h. */
#include "util/mailbox.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int mailbox__init(struct mailbox *mailbox, size_t size)
{
        int fds[2];

        *mailbox = (struct mailbox)MAILBOX_INIT;
        if (size == 0 || size > MAILBOX_MAX_MESSAGE)
                return -EINVAL;
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        mailbox->read_fd = fds[0];
        mailbox->write_fd = fds[1];
        mailbox->size = size;
        return 0;
}

void mailbox__release(struct mailbox *mailbox)
{
        if (mailbox->read_fd >= 0)
                close(mailbox->read_fd);
        if (mailbox->write_fd >= 0)
                close(mailbox->write_fd);
        mailbox->read_fd = mailbox->write_fd = -1;
}

bool mailbox__send(struct mailbox *mailbox, const void *message)
{
        if (mailbox->write_fd < 0)
                return false;
        /* All or nothing: a pipe write of at most PIPE_BUF bytes is atomic,
         * and with O_NONBLOCK it fails with EAGAIN rather than writing part. */
        return write(mailbox->write_fd, message, mailbox->size) == (ssize_t)mailbox->size;
}

bool mailbox__receive(struct mailbox *mailbox, void *message)
{
        unsigned char buffer[MAILBOX_MAX_MESSAGE];
        bool got = false;

        if (mailbox->read_fd < 0)
                return false;
        while (read(mailbox->read_fd, buffer, mailbox->size) == (ssize_t)mailbox->size)
                got = true;
        if (got)
                memcpy(message, buffer, mailbox->size);
        return got;
}

int mailbox__fd(const struct mailbox *mailbox)
{
        return mailbox->read_fd;
}
