/* sd_notify.c — see sd_notify.h. */
#include "util/sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/cleanup.h"

static int socket_address(const char *name, struct sockaddr_un *addr, socklen_t *len)
{
        size_t n = strlen(name);

        if (n < 2 || n >= sizeof(addr->sun_path) || (name[0] != '/' && name[0] != '@'))
                return -EINVAL;
        memset(addr, 0, sizeof(*addr));
        addr->sun_family = AF_UNIX;
        memcpy(addr->sun_path, name, n);
        if (name[0] == '@')
                addr->sun_path[0] = '\0'; /* abstract namespace */
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '/'));
        return 0;
}

int sd_notify__send(const char *state)
{
        const char *name = getenv("NOTIFY_SOCKET");
        struct sockaddr_un addr;
        socklen_t len;
        _cleanup_close_ int fd = -1;
        int r;

        if (!name || !*name)
                return 0;
        r = socket_address(name, &addr, &len);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr, len) < 0)
                return -errno;
        return 1;
}

uint64_t sd_notify__watchdog_usec(void)
{
        const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
        char *end;

        if (!usec || !*usec)
                return 0;
        if (pid && *pid && strtol(pid, NULL, 10) != (long)getpid())
                return 0;
        unsigned long long value = strtoull(usec, &end, 10);
        return *end == '\0' ? (uint64_t)value : 0;
}
