/* context_writer_cost — the C writer's cost per call on one thread (its
 * slot already claimed): N splunk_profd_context_set() calls in a row, then
 * N set + clear pairs; clear is the pair minus a set.  Prints
 * "set NS clear NS ns", the best of R repetitions (the machine is shared:
 * the minimum is the writer's cost, the rest is noise).
 *
 *   context_writer_cost [N [R]]      defaults 1000000 and 7 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "splunk_profd_context.h"

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
        long n = argc > 1 ? atol(argv[1]) : 1000000;
        int rounds = argc > 2 ? atoi(argv[2]) : 7;
        uint8_t trace_id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        uint8_t span_id[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        double best_set = 1e18, best_pair = 1e18;

        if (n <= 0 || rounds <= 0 || splunk_profd_context_init(0) < 0)
                return 1;
        splunk_profd_context_set(trace_id, span_id, 1); /* claims the slot */
        for (int r = 0; r < rounds; r++) {
                uint64_t t0 = now_ns();
                for (long i = 0; i < n; i++) {
                        span_id[7] = (uint8_t)i; /* a new span each time */
                        splunk_profd_context_set(trace_id, span_id, 1);
                }
                uint64_t t1 = now_ns();
                for (long i = 0; i < n; i++) {
                        span_id[7] = (uint8_t)i;
                        splunk_profd_context_set(trace_id, span_id, 1);
                        splunk_profd_context_clear();
                }
                uint64_t t2 = now_ns();
                double set = (double)(t1 - t0) / (double)n, pair = (double)(t2 - t1) / (double)n;
                best_set = set < best_set ? set : best_set;
                best_pair = pair < best_pair ? pair : best_pair;
        }
        /* clear = (set + clear) - set */
        printf("set %.1f clear %.1f ns\n", best_set, best_pair - best_set);
        return 0;
}
