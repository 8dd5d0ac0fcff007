/* test_facts_reader.c — engine/facts_reader: a look comes back with this
 * process's environment and maps, a look asked again supersedes the
 * first (one answer), a look at no process comes back as errors, and
 * releasing frees what nobody took. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/facts_reader.h"
#include "tests/unit/check.h"
#include "util/clock.h"

/* Waits up to 5 s (a loaded CI host) for a finished look. */
static bool take(struct facts_reader *reader, struct facts_answer *answer)
{
        for (int i = 0; i < 500; i++) {
                if (facts_reader__take(reader, answer, monotonic_ns()))
                        return true;
                (void)poll(NULL, 0, 10);
        }
        return false;
}

static void test_look(void)
{
        struct facts_reader reader = FACTS_READER_INIT;
        struct facts_answer answer;
        char exe[4096];
        ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof(exe));

        CHECK(exe_len > 0 && exe_len < (ssize_t)sizeof(exe));
        CHECK(setenv("FACTS_READER_TEST", "yes", 1) == 0);
        CHECK(facts_reader__ask(&reader, getpid(), 2, monotonic_ns()));
        CHECK(facts_reader__asked(&reader, getpid()));
        CHECK(facts_reader__ask(&reader, getpid(), 1, monotonic_ns())); /* supersedes */
        CHECK(take(&reader, &answer));
        CHECK(answer.pid == getpid() && answer.previous == 1);
        CHECK(answer.environ_error == 0 && answer.environ_len > 0 && answer.maps_error == 0);
        CHECK(answer.maps && memmem(answer.maps, answer.maps_len, exe, (size_t)exe_len));
        facts_answer__release(&answer);
        CHECK(!facts_reader__asked(&reader, getpid()));
        /* The superseded look's replies came first (one worker, in order)
         * and were dropped: nothing more waits. */
        CHECK(!facts_reader__take(&reader, &answer, monotonic_ns()));

        CHECK(facts_reader__ask(&reader, 0x7ffffff0, -1, monotonic_ns())); /* no such process */
        CHECK(take(&reader, &answer));
        CHECK(answer.environ_error < 0 && answer.maps_error < 0 && !answer.maps);
        facts_answer__release(&answer);

        CHECK(facts_reader__ask(&reader, getpid(), -1, monotonic_ns())); /* left to release */
        facts_reader__release(&reader);
        facts_reader__release(&reader); /* twice is harmless */
}

int main(void)
{
        test_look();
        return 0;
}
