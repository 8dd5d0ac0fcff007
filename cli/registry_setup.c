/* registry_setup.c — see registry_setup.h. */
#include "cli/registry_setup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/profiled_target.h"
#include "engine/run_status.h"
#include "engine/watch.h"
#include "otlp/exporter.h"
#include "pprof/profile_builder.h"
#include "symbolize/symbolizer.h"

int registry__init(struct registry *registry, const struct profd_config *config)
{
        /* sample_recorder.h gives every sample these three values. */
        struct profile_builder_options options = {
            .n_sample_types = 3,
            .sample_type = {"samples", "cpu", "wall"},
            .sample_unit = {"count", "nanoseconds", "nanoseconds"},
            .period_type = "cpu",
            .period_unit = "nanoseconds",
            .period = config->interval_ms * 1000000,
            .default_sample_type = config->wall ? 2 : 1,
        };

        memset(registry, 0, sizeof(*registry));
        /* Before anything can fail, so that release closes only what was
         * opened (zero is a valid descriptor: stdin). */
        registry->sigchld_fd = registry->reload_fd = registry->stop_fd = registry->done_fd = -1;
        registry->command.go_fd = -1;
        registry->status = (struct mailbox)MAILBOX_INIT;
        registry->maps_reader = (struct maps_reader)MAPS_READER_INIT;
        registry->config = *config;
        registry->include_internal_stacks = config->include_internal_stacks;
        int r = mailbox__init(&registry->status, sizeof(struct run_status));
        if (r < 0)
                return r;
        registry->reload_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&registry->reload_lock, NULL);
        if (config->watch && !(registry->watch = watch__new()))
                return -ENOMEM;
        registry->stop_fd = eventfd(0, EFD_CLOEXEC);
        registry->done_fd = eventfd(0, EFD_CLOEXEC);
        registry->symbolizer = symbolizer__new();
        py_binaries__init(&registry->py_binaries);
        /* Only a run that writes --output builds a profile: dump and top
         * read stacks through their sink, and a run that only exports (the
         * daemon as the unit runs it) would otherwise keep every sample it
         * ever took. */
        bool build_profile = config->command == COMMAND_RECORD && config->output;
        if (build_profile)
                registry->builder = profile_builder__new(&options);
        registry->recorder.builder = registry->builder;
        registry->recorder.period_ms = config->interval_ms;
        if (registry->stop_fd < 0 || registry->done_fd < 0 || registry->reload_fd < 0 ||
            !registry->symbolizer || (build_profile && !registry->builder) ||
            py_walk_scratch__init(&registry->py_scratch) < 0)
                return -ENOMEM;
        return 0;
}

void registry__release(struct registry *registry)
{
        for (size_t i = 0; i < registry->targets.n_targets; i++)
                profiled_target__free(registry->targets.targets[i]);
        target_set__free(&registry->targets);
        profile_builder__free(registry->builder);
        symbolizer__free(registry->symbolizer);
        py_walk_scratch__release(&registry->py_scratch);
        py_binaries__clear(&registry->py_binaries);
        exporter__free(registry->exporter);
        watch__free(registry->watch);
        mailbox__release(&registry->status);
        if (registry->reload_fd >= 0)
                close(registry->reload_fd);
        if (registry->sigchld_fd >= 0)
                close(registry->sigchld_fd);
        if (registry->stop_fd >= 0)
                close(registry->stop_fd);
        if (registry->done_fd >= 0)
                close(registry->done_fd);
        if (registry->command.go_fd >= 0)
                close(registry->command.go_fd);
}
