/* discovery.c — see discovery.h.  Everything read from /proc is
 * untrusted and bounded: the environment to 64 KiB, maps to 65536 lines. */
#include "engine/discovery.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "context/context_format.h"
#include "util/array.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/log.h"

#define SCAN_PERIOD_NS         (200ull * 1000 * 1000)
#define SCAN_PERIOD_NETLINK_NS (2000ull * 1000 * 1000)
#define RECHECK_NS             (10000ull * 1000 * 1000)
#define ENVIRON_MAX_BYTES      (64 * 1024)
#define MAPS_MAX_LINES         65536
#define PENDING_MAX            65536

/* ------------------------------------------------------------ netlink */

static int netlink_subscribe(int fd)
{
        struct {
                struct nlmsghdr header;
                struct cn_msg message;
                enum proc_cn_mcast_op op;
        } __attribute__((packed)) request = {
            .header = {.nlmsg_len = sizeof(request),
                       .nlmsg_type = NLMSG_DONE,
                       .nlmsg_pid = (__u32)getpid()},
            .message = {.id = {.idx = CN_IDX_PROC, .val = CN_VAL_PROC},
                        .len = sizeof(enum proc_cn_mcast_op)},
            .op = PROC_CN_MCAST_LISTEN,
        };

        return send(fd, &request, sizeof(request), 0) == (ssize_t)sizeof(request) ? 0 : -errno;
}

static int netlink_open(void)
{
        struct sockaddr_nl addr = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC};
        _cleanup_close_ int fd =
            socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
        int size = 4 << 20;

        if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
            netlink_subscribe(fd) < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        return take_fd(fd);
}

void discovery__init(struct discovery *discovery)
{
        memset(discovery, 0, sizeof(*discovery));
        discovery->netlink_fd = netlink_open();
        if (discovery->netlink_fd < 0)
                log_notice("watch: netlink process connector unavailable (%s): scanning /proc "
                           "every 200 ms",
                           strerror(-discovery->netlink_fd));
        else
                log_info("watch: process events from the netlink process connector");
}

void discovery__release(struct discovery *discovery)
{
        if (discovery->netlink_fd >= 0)
                close(discovery->netlink_fd);
        free(discovery->seen);
        free(discovery->pending);
        memset(discovery, 0, sizeof(*discovery));
        discovery->netlink_fd = -1;
}

/* ------------------------------------------------------------- table */

static struct seen_entry *seen_find(struct discovery *discovery, pid_t pid, size_t *at)
{
        size_t lo = 0, hi = discovery->n_seen;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (discovery->seen[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *at = lo;
        return lo < discovery->n_seen && discovery->seen[lo].pid == pid ? &discovery->seen[lo]
                                                                        : NULL;
}

static void seen_forget(struct discovery *discovery, pid_t pid)
{
        size_t at;

        if (!seen_find(discovery, pid, &at))
                return;
        memmove(&discovery->seen[at], &discovery->seen[at + 1],
                (discovery->n_seen - at - 1) * sizeof(discovery->seen[0]));
        discovery->n_seen--;
}

void discovery__set(struct discovery *discovery, pid_t pid, enum seen_state state, uint64_t now_ns)
{
        size_t at;
        struct seen_entry *entry = seen_find(discovery, pid, &at);

        if (!entry) {
                if (ARRAY_RESERVE(discovery->seen, discovery->seen_capacity,
                                  discovery->n_seen + 1) < 0)
                        return;
                memmove(&discovery->seen[at + 1], &discovery->seen[at],
                        (discovery->n_seen - at) * sizeof(discovery->seen[0]));
                discovery->n_seen++;
                entry = &discovery->seen[at];
                entry->pid = pid;
        }
        entry->state = (uint8_t)state;
        entry->examined_ns = now_ns;
}

static void pending_add(struct discovery *discovery, pid_t pid)
{
        if (discovery->n_pending >= PENDING_MAX)
                return; /* the next scan finds it */
        if (ARRAY_RESERVE(discovery->pending, discovery->pending_capacity,
                          discovery->n_pending + 1) < 0)
                return;
        discovery->pending[discovery->n_pending++] = pid;
}

/* A new process of a parent found unlabelled or excluded.  Until it
 * executes, it has its parent's environment, executable and name: the
 * same verdict, taken without a look.  A look now would often block the
 * tracer thread: a child that executes at once (fork, then exec) holds its
 * exec lock, which opening /proc/PID/environ waits for, 0.1-0.4 s on a
 * loaded host (issue 20, bench/RESULTS.md).  Its exec event brings it back
 * (examine_pending looks whatever the state). */
static bool inherits_rejection(struct discovery *discovery, const struct proc_event *event)
{
        size_t at;
        struct seen_entry *parent = seen_find(discovery, event->event_data.fork.parent_tgid, &at);

        if (!parent || parent->state != SEEN_REJECTED)
                return false;
        discovery__set(discovery, event->event_data.fork.child_tgid, SEEN_REJECTED, monotonic_ns());
        return true;
}

static void on_proc_event(struct discovery *discovery, const struct proc_event *event)
{
        switch (event->what) {
        case PROC_EVENT_FORK:
                if (event->event_data.fork.child_pid == event->event_data.fork.child_tgid &&
                    !inherits_rejection(discovery, event))
                        pending_add(discovery, event->event_data.fork.child_tgid);
                break;
        case PROC_EVENT_EXEC:
                pending_add(discovery, event->event_data.exec.process_tgid);
                break;
        case PROC_EVENT_EXIT:
                if (event->event_data.exit.process_pid == event->event_data.exit.process_tgid)
                        seen_forget(discovery, event->event_data.exit.process_tgid);
                break;
        default:
                break;
        }
}

void discovery__read_netlink(struct discovery *discovery)
{
        char buffer[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
        ssize_t n;

        if (discovery->netlink_fd < 0)
                return;
        while ((n = recv(discovery->netlink_fd, buffer, sizeof(buffer), 0)) > 0) {
                for (struct nlmsghdr *h = (struct nlmsghdr *)buffer; NLMSG_OK(h, (size_t)n);
                     h = NLMSG_NEXT(h, n)) {
                        struct cn_msg *message = NLMSG_DATA(h);
                        if (h->nlmsg_type != NLMSG_DONE ||
                            h->nlmsg_len <
                                NLMSG_LENGTH(sizeof(*message) + sizeof(struct proc_event)))
                                continue;
                        struct proc_event event; /* the payload is only 4-byte aligned */
                        memcpy(&event, message->data, sizeof(event));
                        on_proc_event(discovery, &event);
                }
        }
        if (n < 0 && errno == ENOBUFS)
                discovery->next_scan_ns = 0; /* lost events: scan now */
}

/* -------------------------------------------------------------- passes */

static void examine(struct discovery *discovery, pid_t pid, int previous, uint64_t now_ns,
                    discovery_examine_fn fn, void *arg)
{
        discovery->examined++;
        discovery__set(discovery, pid, fn(arg, pid, previous), now_ns);
}

static void examine_pending(struct discovery *discovery, uint64_t now_ns, discovery_examine_fn fn,
                            void *arg)
{
        for (size_t i = 0; i < discovery->n_pending; i++) {
                size_t at;
                struct seen_entry *entry = seen_find(discovery, discovery->pending[i], &at);
                examine(discovery, discovery->pending[i], entry ? entry->state : -1, now_ns, fn,
                        arg);
        }
        discovery->n_pending = 0;
}

static int compare_pids(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return (x > y) - (x < y);
}

/* The numeric entries of /proc, sorted.  NULL on failure. */
static pid_t *list_pids(size_t *n)
{
        _cleanup_(closedirp) DIR *dir = opendir("/proc");
        size_t capacity = 0;
        pid_t *pids = NULL;
        struct dirent *entry;

        *n = 0;
        if (!dir || ARRAY_RESERVE(pids, capacity, 1024) < 0) {
                free(pids);
                return NULL;
        }
        while ((entry = readdir(dir))) {
                long pid = strtol(entry->d_name, NULL, 10);
                if (pid <= 0)
                        continue;
                if (ARRAY_RESERVE(pids, capacity, *n + 1) < 0)
                        break;
                pids[(*n)++] = (pid_t)pid;
        }
        qsort(pids, *n, sizeof(*pids), compare_pids);
        return pids;
}

static void scan(struct discovery *discovery, uint64_t now_ns, discovery_examine_fn fn, void *arg)
{
        size_t n, at;
        _cleanup_free_ pid_t *pids = list_pids(&n);

        if (!pids)
                return;
        discovery->scans++;
        /* Forget the pids that are gone (missed exits). */
        for (size_t i = 0; i < discovery->n_seen;) {
                if (bsearch(&discovery->seen[i].pid, pids, n, sizeof(*pids), compare_pids))
                        i++;
                else
                        seen_forget(discovery, discovery->seen[i].pid);
        }
        for (size_t i = 0; i < n; i++) {
                struct seen_entry *entry = seen_find(discovery, pids[i], &at);
                if (entry && now_ns - entry->examined_ns < RECHECK_NS)
                        continue;
                examine(discovery, pids[i], entry ? entry->state : -1, now_ns, fn, arg);
        }
}

void discovery__pass(struct discovery *discovery, uint64_t now_ns, discovery_examine_fn fn,
                     void *arg)
{
        examine_pending(discovery, now_ns, fn, arg);
        if (now_ns < discovery->next_scan_ns)
                return;
        scan(discovery, now_ns, fn, arg);
        discovery->next_scan_ns =
            now_ns + (discovery->netlink_fd >= 0 ? SCAN_PERIOD_NETLINK_NS : SCAN_PERIOD_NS);
}

/* ---------------------------------------------------------- proc facts */

static void read_uid(pid_t pid, struct proc_facts *facts)
{
        char path[64], line[256];
        _cleanup_fclose_ FILE *f = NULL;
        unsigned int uid;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "Uid: %u", &uid) == 1) {
                        facts->uid = (uid_t)uid;
                        return;
                }
}

/* "0::/system.slice/web.service" -> cgroup and the innermost *.service. */
static void read_cgroup(pid_t pid, struct proc_facts *facts)
{
        char path[64], line[1200];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "0::", 3) != 0)
                        continue;
                line[strcspn(line, "\n")] = '\0';
                snprintf(facts->cgroup, sizeof(facts->cgroup), "%.1000s", line + 3);
        }
        snprintf(line, sizeof(line), "%s", facts->cgroup);
        for (char *save = NULL, *part = strtok_r(line, "/", &save); part;
             part = strtok_r(NULL, "/", &save)) {
                size_t n = strlen(part);
                if (n > 8 && strcmp(part + n - 8, ".service") == 0)
                        snprintf(facts->unit, sizeof(facts->unit), "%s", part);
        }
}

static int read_environ(pid_t pid, struct proc_facts *facts)
{
        char path[64];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        facts->environ = malloc(ENVIRON_MAX_BYTES);
        if (!facts->environ)
                return -ENOMEM;
        while (facts->environ_len < ENVIRON_MAX_BYTES &&
               (n = read(fd, facts->environ + facts->environ_len,
                         ENVIRON_MAX_BYTES - facts->environ_len)) > 0)
                facts->environ_len += (size_t)n;
        return 0;
}

int proc_facts__read_but_environ(pid_t pid, struct proc_facts *facts)
{
        char path[64];
        ssize_t n;

        memset(facts, 0, sizeof(*facts));
        facts->pid = pid;
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        n = readlink(path, facts->exe, sizeof(facts->exe) - 1);
        if (n < 0)
                return -errno; /* kernel threads have none */
        facts->exe[n] = '\0';
        read_uid(pid, facts);
        read_cgroup(pid, facts);
        return 0;
}

int proc_facts__read(pid_t pid, struct proc_facts *facts)
{
        int r = proc_facts__read_but_environ(pid, facts);

        return r < 0 ? r : read_environ(pid, facts);
}

void proc_facts__release(struct proc_facts *facts)
{
        free(facts->environ);
        facts->environ = NULL;
        facts->environ_len = 0;
}

bool proc_facts__maps_have_segment(const char *text, size_t len)
{
        static const char needle[] = "/memfd:" CONTEXT_MEMFD_NAME;

        /* The text is bounded (PROC_MAPS_MAX_TEXT) and the needle has no
         * newline: a match is within one line, as a line scan finds it. */
        return text && memmem(text, len, needle, sizeof(needle) - 1) != NULL;
}

bool proc_facts__has_segment(pid_t pid)
{
        char path[64], line[1024];
        _cleanup_fclose_ FILE *f = NULL;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
        f = fopen(path, "re");
        for (int i = 0; f && i < MAPS_MAX_LINES && fgets(line, sizeof(line), f); i++)
                if (strstr(line, "/memfd:" CONTEXT_MEMFD_NAME))
                        return true;
        return false;
}
