/* target_leader_exit.c — a process whose main thread calls pthread_exit
 * while a worker runs on (tests/test_leader_exit.py).  The leader is then
 * a zombie: /proc/PID/maps is empty and its memory unreadable, yet the
 * process lives.  With argument "now" the leader exits right after
 * "ready"; otherwise when a line arrives on stdin. */
#include "target_common.h"

#include <unistd.h>

static pthread_barrier_t started;
static volatile unsigned long sink;

__attribute__((noinline)) static void leader_exit_burn(void)
{
        for (unsigned long i = 0; i < 1000000ul; i++)
                sink += i;
        __asm__ volatile("" ::: "memory"); /* keep the frame */
}

static void *worker(void *arg)
{
        (void)arg;
        target_thread_started("burner", &started);
        for (;;)
                leader_exit_burn();
        return NULL;
}

int main(int argc, char **argv)
{
        char line[16];

        target_check("pthread_barrier_init", pthread_barrier_init(&started, NULL, 2));
        target_spawn(worker);
        pthread_barrier_wait(&started);
        target_ready();
        if (argc < 2 || strcmp(argv[1], "now") != 0)
                (void)!fgets(line, sizeof(line), stdin);
        pthread_exit(NULL);
}
