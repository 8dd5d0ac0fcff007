/* cleanup.h — scope-bound resource release, systemd style.
 *
 * Every function that acquires a file descriptor, a heap block or a FILE
 * declares it with one of these attributes, so that each early return
 * releases it.  Ownership leaves the scope through take_ptr()/take_fd(). */
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

/* Defines `name(type *p)`, which calls `func(*p)` when *p is not NULL, for
 * _cleanup_(name).  Every destructor handed to it must accept a
 * half-built object (fields still zero or NULL), as systemd's do, so that
 * a constructor's error path can simply free what it has. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func, name)                                              \
        static inline void name(type *p)                                                           \
        {                                                                                          \
                if (*p)                                                                            \
                        func(*p);                                                                  \
        }

static inline void freep(void *p)
{
        free(*(void **)p);
}

static inline void closep(int *fd)
{
        if (*fd >= 0)
                close(*fd);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose, fclosep)
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir, closedirp)

#define _cleanup_free_   _cleanup_(freep)
#define _cleanup_close_  _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hands ownership of *p to the caller and leaves NULL behind. */
#define take_ptr(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _taken = (p);                                                        \
                (p) = NULL;                                                                        \
                _taken;                                                                            \
        })

#define take_fd(fd)                                                                                \
        ({                                                                                         \
                int _taken = (fd);                                                                 \
                (fd) = -1;                                                                         \
                _taken;                                                                            \
        })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
