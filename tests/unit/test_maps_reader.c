/* test_maps_reader.c — symbolize/maps_reader: a request comes back with
 * this process's maps text and the caller's serial, a failed read
 * comes back as its error, and stopping frees what nobody took. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/maps_reader.h"
#include "tests/unit/check.h"

/* Waits up to 5 s (a loaded CI host) for a reply. */
static void take(struct maps_reader *reader, struct maps_reply *reply)
{
        struct pollfd pfd = {.fd = reader->reply_fd[0], .events = POLLIN};

        CHECK(poll(&pfd, 1, 5000) == 1);
        CHECK(maps_reader__take(reader, reply));
}

static void test_round_trip(void)
{
        struct maps_reader reader;
        struct maps_reply reply;
        char exe[4096];
        ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof(exe));

        CHECK(exe_len > 0 && exe_len < (ssize_t)sizeof(exe));
        CHECK(maps_reader__start(&reader) == 0);
        CHECK(!maps_reader__take(&reader, &reply));
        CHECK(maps_reader__ask(&reader, getpid(), 7));
        take(&reader, &reply);
        CHECK(reply.pid == getpid() && reply.serial == 7 && reply.error == 0);
        /* This process's maps (not compared byte for byte with a second
         * read: ASan's allocator maps memory in between). */
        CHECK(reply.len > 0 && memmem(reply.text, reply.len, exe, (size_t)exe_len));
        free(reply.text);

        CHECK(maps_reader__ask_for(&reader, getpid(), 11, MAPS_READER_ENVIRON));
        take(&reader, &reply);
        CHECK(reply.serial == 11 && reply.what == MAPS_READER_ENVIRON && reply.error == 0);
        CHECK(reply.len > 0 && reply.len <= MAPS_READER_ENVIRON_MAX &&
              reply.text[reply.len - 1] == 0);
        free(reply.text);

        CHECK(maps_reader__ask(&reader, 0x7ffffff0, 8)); /* no such process */
        take(&reader, &reply);
        CHECK(reply.serial == 8 && reply.error < 0 && !reply.text);

        CHECK(maps_reader__ask(&reader, getpid(), 9)); /* left for stop to free */
        maps_reader__stop(&reader);
        maps_reader__stop(&reader); /* twice is harmless */
        CHECK(!maps_reader__ask(&reader, getpid(), 10));
}

static void test_never_started(void)
{
        struct maps_reader reader = MAPS_READER_INIT;
        struct maps_reply reply;

        CHECK(!maps_reader__ask(&reader, getpid(), 1));
        CHECK(!maps_reader__take(&reader, &reply));
        maps_reader__stop(&reader);
}

int main(void)
{
        test_round_trip();
        test_never_started();
        return 0;
}
