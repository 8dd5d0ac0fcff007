/* check.h — the one assertion macro of the unit tests: prints where and
 * what failed, exits non-zero (meson counts the test as failed).  Unlike
 * assert() it stays active in release builds. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)
