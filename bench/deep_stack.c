/* deep_stack.c — benchmark target: THREADS busy threads, each spinning at
 * the bottom of a DEPTH-frame native call chain, so the pause and the
 * unwind cost of a known stack depth can be measured.
 * Usage: deep_stack DEPTH THREADS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int depth = 50;

static __attribute__((noinline)) unsigned long spin_forever(unsigned long acc)
{
        for (volatile int running = 1; running;)
                __asm__ volatile("" : "+r"(acc));
        return acc;
}

static __attribute__((noinline)) unsigned long descend(int level, unsigned long acc)
{
        unsigned long result;

        if (level <= 1)
                return spin_forever(acc);
        result = descend(level - 1, acc * 3 + 1);
        __asm__ volatile("" : "+r"(result)); /* no tail call */
        return result;
}

static void *spin(void *arg)
{
        /* spin_forever, spin, start_thread and clone3 add four frames */
        return (void *)descend(depth - 4, 1);
}

int main(int argc, char **argv)
{
        int threads = argc > 2 ? atoi(argv[2]) : 1;
        pthread_t id;

        depth = argc > 1 ? atoi(argv[1]) : 50;
        for (int i = 0; i < threads; i++)
                pthread_create(&id, NULL, spin, NULL);
        printf("ready\n");
        fflush(stdout);
        pthread_join(id, NULL);
        return 0;
}
