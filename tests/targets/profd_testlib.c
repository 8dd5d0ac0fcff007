/* profd_testlib.c — libprofd_testlib.so: a leaf function in a shared
 * object, so the profile must unwind across a DSO boundary (through the
 * PLT) and map a second build id. */
#include "profd_testlib.h"

static volatile unsigned long lib_sink;

__attribute__((noinline, noipa)) void lib_spin(unsigned long iterations)
{
        unsigned long acc = lib_sink;

        /* No calls in here: while the thread runs, it is almost always in
         * this loop, so lib_spin is the leaf of nearly every sample. */
        for (unsigned long i = 0; i < iterations; i++) {
                acc = acc * 6364136223846793005ul + i;
                __asm__ volatile("" : "+r"(acc));
        }
        lib_sink = acc;
}
