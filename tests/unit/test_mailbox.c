/* test_mailbox.c — util/mailbox: the receiver sees the newest whole
 * message, the sender never blocks, and a torn message is never read. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "tests/unit/check.h"
#include "util/mailbox.h"

struct message {
        uint64_t sequence;
        uint64_t copies[63]; /* each = sequence: a torn read would differ */
};

static void fill(struct message *m, uint64_t sequence)
{
        m->sequence = sequence;
        for (size_t i = 0; i < 63; i++)
                m->copies[i] = sequence;
}

static void check_whole(const struct message *m)
{
        for (size_t i = 0; i < 63; i++)
                CHECK(m->copies[i] == m->sequence);
}

static void test_newest_wins(void)
{
        struct mailbox box;
        struct message m;

        CHECK(mailbox__init(&box, sizeof(m)) == 0);
        CHECK(!mailbox__receive(&box, &m));
        for (uint64_t i = 1; i <= 3; i++) {
                fill(&m, i);
                CHECK(mailbox__send(&box, &m));
        }
        memset(&m, 0, sizeof(m));
        CHECK(mailbox__receive(&box, &m));
        CHECK(m.sequence == 3);
        check_whole(&m);
        CHECK(!mailbox__receive(&box, &m));
        mailbox__release(&box);
        mailbox__release(&box); /* twice is harmless */
}

static void test_full_drops_without_blocking(void)
{
        struct mailbox box;
        struct message m;
        size_t sent = 0, dropped = 0;

        CHECK(mailbox__init(&box, sizeof(m)) == 0);
        for (uint64_t i = 1; i <= 10000; i++) {
                fill(&m, i);
                if (mailbox__send(&box, &m))
                        sent++;
                else
                        dropped++;
        }
        CHECK(sent > 0 && dropped > 0); /* a 64 KiB pipe holds 128 of them */
        CHECK(mailbox__receive(&box, &m));
        CHECK(m.sequence == sent); /* the newest that fitted */
        check_whole(&m);
        mailbox__release(&box);
}

static void *sender(void *arg)
{
        struct mailbox *box = arg;
        struct message m;

        for (uint64_t i = 1; i <= 200000; i++) {
                fill(&m, i);
                (void)mailbox__send(box, &m);
        }
        return NULL;
}

static void test_threads_never_tear(void)
{
        struct mailbox box;
        struct message m;
        pthread_t thread;
        uint64_t last = 0;

        CHECK(mailbox__init(&box, sizeof(m)) == 0);
        CHECK(pthread_create(&thread, NULL, sender, &box) == 0);
        for (int i = 0; i < 100000; i++) {
                if (!mailbox__receive(&box, &m))
                        continue;
                check_whole(&m);
                CHECK(m.sequence > last);
                last = m.sequence;
        }
        pthread_join(thread, NULL);
        mailbox__release(&box);
}

static void test_bad_size(void)
{
        struct mailbox box;

        CHECK(mailbox__init(&box, 0) < 0);
        CHECK(mailbox__init(&box, MAILBOX_MAX_MESSAGE + 1) < 0);
        mailbox__release(&box); /* a failed init leaves it releasable */
}

int main(void)
{
        test_newest_wins();
        test_full_drops_without_blocking();
        test_threads_never_tear();
        test_bad_size();
        return 0;
}
