/* workload.c — the demo's example target: a small "service" with two busy
 * worker threads doing different CPU work and one thread waiting for
 * requests in epoll_wait, so a profile shows named hot paths, thread names
 * and a blocked thread that splunk-profd samples without stopping it. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static __attribute__((noinline)) int is_prime(uint64_t n)
{
        if (n < 2)
                return 0;
        for (uint64_t d = 2; d * d <= n; d++)
                if (n % d == 0)
                        return 0;
        return 1;
}

static __attribute__((noinline)) uint64_t count_primes(uint64_t from, uint64_t to)
{
        uint64_t count = 0;

        for (uint64_t n = from; n < to; n++)
                count += is_prime(n);
        return count;
}

static __attribute__((noinline)) uint64_t fnv1a(const char *text, size_t len)
{
        uint64_t hash = 1469598103934665603ull;

        for (size_t i = 0; i < len; i++)
                hash = (hash ^ (unsigned char)text[i]) * 1099511628211ull;
        return hash;
}

static __attribute__((noinline)) uint64_t hash_strings(int rounds)
{
        char buffer[256];
        uint64_t total = 0;

        for (int i = 0; i < rounds; i++) {
                int len = snprintf(buffer, sizeof(buffer), "request-%d-payload", i);
                total += fnv1a(buffer, (size_t)len);
        }
        return total;
}

static void *solver_main(void *arg)
{
        volatile uint64_t sink = 0;

        pthread_setname_np(pthread_self(), "solver");
        for (;;)
                sink += count_primes(1000000, 1020000);
        return NULL;
}

static void *parser_main(void *arg)
{
        volatile uint64_t sink = 0;

        pthread_setname_np(pthread_self(), "parser");
        for (;;)
                sink += hash_strings(100000);
        return NULL;
}

static void *listener_main(void *arg)
{
        struct epoll_event event;
        int epoll_fd = epoll_create1(0);

        pthread_setname_np(pthread_self(), "listener");
        for (;;)
                epoll_wait(epoll_fd, &event, 1, -1);
        return NULL;
}

int main(void)
{
        pthread_t threads[3];

        pthread_create(&threads[0], NULL, solver_main, NULL);
        pthread_create(&threads[1], NULL, parser_main, NULL);
        pthread_create(&threads[2], NULL, listener_main, NULL);
        for (int i = 0; i < 3; i++)
                pthread_join(threads[i], NULL);
        return 0;
}
