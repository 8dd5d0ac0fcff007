/* profd_testlib.h — the shared library that target_chain's busy thread
 * spends nearly all its time in (libprofd_testlib.so). */
#pragma once

/* Spins in a call-free loop for `iterations` steps, then returns. */
void lib_spin(unsigned long iterations);
