/* test_backoff.c — util/backoff: the schedules its three users rely on
 * (1 s doubling to 32 s without end; 20 ms doubling five times, then
 * never), and no overflow after many tries. */
#include <limits.h>

#include "tests/unit/check.h"
#include "util/backoff.h"

#define MS (1000ull * 1000)
#define S  (1000ull * MS)

/* asyncio and task spans: at once, then 1, 2, 4 ... 32, 32 s apart. */
static void test_capped_without_end(void)
{
        static const struct backoff_policy policy = {.first_ns = S, .max_ns = 32 * S};
        struct backoff b = {0};
        uint64_t now = 5 * S, wait = S;

        CHECK(backoff__attempt(&b, &policy, now));
        CHECK(!backoff__attempt(&b, &policy, now));
        for (int i = 0; i < 10; i++) {
                CHECK(!backoff__attempt(&b, &policy, now + wait - 1));
                now += wait;
                CHECK(backoff__attempt(&b, &policy, now));
                wait = wait * 2 > 32 * S ? 32 * S : wait * 2;
        }
        CHECK(b.tries == 11 && wait == 32 * S);
        CHECK(backoff_policy__wait_ns(&policy, 1) == S);
        CHECK(backoff_policy__wait_ns(&policy, 6) == 32 * S);
        CHECK(backoff_policy__wait_ns(&policy, 100) == 32 * S);
        CHECK(backoff_policy__wait_ns(&policy, UINT_MAX) == 32 * S);
}

/* Thread names: after the n-th miss, 20 ms << (n - 1), for 5 misses. */
static void test_limited_retries(void)
{
        static const struct backoff_policy policy = {
            .first_ns = 20 * MS, .max_ns = 320 * MS, .retries = 5};

        CHECK(backoff_policy__due(&policy, 0, 0, 0));
        for (unsigned int misses = 1; misses <= 5; misses++) {
                uint64_t wait = (20 * MS) << (misses - 1);
                CHECK(!backoff_policy__due(&policy, misses, S, S + wait - 1));
                CHECK(backoff_policy__due(&policy, misses, S, S + wait));
        }
        CHECK(!backoff_policy__due(&policy, 6, S, 1000 * S));
}

int main(void)
{
        test_capped_without_end();
        test_limited_retries();
        return 0;
}
