/* test_registry_setup.c — a registry whose init fails half-way is released
 * without closing descriptors it never opened (fd 0 was closed twice when
 * the --watch allocation failed), and a full init/release leaks none.
 *
 * The failure is induced by this executable's own calloc(), which forwards
 * to glibc's allocator until `fail_calloc` is set. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/registry_setup.h"
#include "check.h"

#define MESON_SKIP 77

#ifdef __SANITIZE_ADDRESS__
int main(void)
{
        return MESON_SKIP; /* ASan owns calloc; ours would bypass it */
}
#else
void *__libc_calloc(size_t n, size_t size);

static bool fail_calloc;

void *calloc(size_t n, size_t size)
{
        if (fail_calloc) {
                errno = ENOMEM;
                return NULL;
        }
        return __libc_calloc(n, size);
}

static int count_fds(void)
{
        DIR *dir = opendir("/proc/self/fd");
        int n = 0;

        CHECK(dir);
        while (readdir(dir))
                n++;
        closedir(dir);
        return n;
}

static void config_for(struct profd_config *config, bool watch)
{
        memset(config, 0, sizeof(*config));
        config->interval_ms = 1000;
        config->stack_bytes = 32768;
        config->max_depth = 1024;
        config->watch = watch;
}

/* Allocation fails at the first calloc (the --watch state). */
static void test_failed_init_is_released(struct registry *registry)
{
        struct profd_config config;
        int before = count_fds();

        config_for(&config, true);
        fail_calloc = true;
        int r = registry__init(registry, &config);
        fail_calloc = false;
        CHECK(r < 0);
        registry__release(registry);
        CHECK(fcntl(0, F_GETFD) >= 0); /* stdin still open */
        CHECK(count_fds() == before);
}

static void test_init_release_leaks_nothing(struct registry *registry)
{
        struct profd_config config;
        int before = count_fds();

        config_for(&config, false);
        CHECK(registry__init(registry, &config) == 0);
        CHECK(registry->stop_fd >= 0 && registry->done_fd >= 0 && registry->reload_fd >= 0);
        registry__release(registry);
        CHECK(count_fds() == before);
}

int main(void)
{
        struct registry *registry = malloc(sizeof(*registry));

        CHECK(registry);
        /* fd 0 must be a real descriptor for the double close to show. */
        if (fcntl(0, F_GETFD) < 0)
                CHECK(open("/dev/null", O_RDONLY) == 0);
        test_init_release_leaks_nothing(registry);
        test_failed_init_is_released(registry);
        free(registry);
        return 0;
}
#endif
