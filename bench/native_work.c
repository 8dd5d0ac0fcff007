/* native_work.c — benchmark target (workload 4): THREADS busy threads, each
 * doing integer hashing at the bottom of a DEPTH-frame native call chain,
 * publishing units of work done in slot 0 of the 64-byte COUNTER_FILE
 * (mmap'd) so the harness can read throughput from outside.
 * Usage: native_work COUNTER_FILE [THREADS] [DEPTH] */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile uint64_t *counter;
static int depth = 30;
static volatile int running = 1;

static __attribute__((noinline)) uint64_t work(uint64_t acc)
{
        while (running) {
                for (int i = 0; i < 100000; i++)
                        acc = (acc ^ (acc >> 13)) * 0x9E3779B97F4A7C15ull + (uint64_t)i;
                __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
                __asm__ volatile("" : "+r"(acc));
        }
        return acc;
}

static __attribute__((noinline)) uint64_t descend(int level, uint64_t acc)
{
        uint64_t result;

        if (level <= 1)
                return work(acc);
        result = descend(level - 1, acc * 3 + 1);
        __asm__ volatile("" : "+r"(result)); /* no tail call */
        return result;
}

static void *run(void *arg)
{
        (void)arg;
        return (void *)(uintptr_t)descend(depth - 4, 1);
}

int main(int argc, char **argv)
{
        int threads = argc > 2 ? atoi(argv[2]) : 1;
        pthread_t id;
        int fd;

        if (argc < 2) {
                fprintf(stderr, "usage: native_work COUNTER_FILE [THREADS] [DEPTH]\n");
                return 2;
        }
        depth = argc > 3 ? atoi(argv[3]) : 30;
        fd = open(argv[1], O_RDWR);
        if (fd < 0 ||
            (counter = mmap(NULL, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
                perror(argv[1]);
                return 1;
        }
        for (int i = 0; i < threads; i++)
                pthread_create(&id, NULL, run, NULL);
        printf("ready\n");
        fflush(stdout);
        pthread_join(id, NULL);
        return 0;
}
