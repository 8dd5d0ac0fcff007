/* target_chain — a thread "busy-chain" spinning in a known call chain:
 *
 *   busy_chain_main -> chain_a -> chain_b -> [chain_inline, inlined] -> lib_spin
 *
 * lib_spin lives in libprofd_testlib.so.  Built with -O2 -g
 * -fomit-frame-pointer, so only DWARF CFI can unwind it.  The main thread
 * just blocks in pthread_join.  Runs until killed.
 *
 * The LINE: markers name the lines the profile's frames must point at
 * (tests/test_native.py reads them). */
#include "profd_testlib.h"
#include "target_common.h"

void chain_a(void);
void chain_b(void);

#define SPIN_ITERATIONS 20000000ul /* tens of milliseconds per call */

static pthread_barrier_t started;

static inline __attribute__((always_inline)) void chain_inline(void)
{
        lib_spin(SPIN_ITERATIONS); /* LINE:chain_inline */
        __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noipa)) void chain_b(void)
{
        chain_inline(); /* LINE:chain_b */
        __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noipa)) void chain_a(void)
{
        chain_b(); /* LINE:chain_a */
        __asm__ volatile("" ::: "memory");
}

static void *busy_chain_main(void *arg)
{
        (void)arg;
        target_thread_started("busy-chain", &started);
        for (;;) {
                chain_a(); /* LINE:busy_chain_main */
                __asm__ volatile("" ::: "memory");
        }
        return NULL;
}

int main(void)
{
        pthread_t busy;

        target_check("pthread_barrier_init", pthread_barrier_init(&started, NULL, 2));
        busy = target_spawn(busy_chain_main);
        pthread_barrier_wait(&started);
        target_ready();
        pthread_join(busy, NULL);
        return 0;
}
