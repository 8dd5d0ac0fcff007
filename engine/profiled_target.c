/* profiled_target.c — see profiled_target.h.
 *
 * Set-up and tear-down live here, below the sampler, watch mode and the
 * tracer loop, so that all three can start and end a target's profiling
 * without calling into one another. */
#include "engine/profiled_target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "attach/proc_thread.h"
#include "engine/event_pump.h"
#include "otlp/otlp_target.h"
#include "pprof/sample_recorder.h"
#include "python/py_process.h"
#include "symbolize/proc_maps.h"
#include "symbolize/symbolizer.h"
#include "unwind/native_unwinder.h"
#include "util/clock.h"
#include "util/log.h"

#define LOCATION_CACHE_SLOTS 16384
/* How long after an exec CPython discovery is retried (see the header). */
/* A shell wrapper or a pyenv shim execs python, whose start-up (site,
 * imports) can take seconds on a loaded host before the runtime validates. */
#define PYTHON_RETRY_NS       (10000ull * 1000 * 1000)
#define PYTHON_RETRY_EVERY_NS (250ull * 1000 * 1000)
/* A request or reply the full pipe dropped is asked again after this. */
#define MAPS_ANSWER_TIMEOUT_NS (2000ull * 1000 * 1000)

uint64_t profiled_target__maps_generation(const struct profiled_target *profiled)
{
        return profiled->space ? address_space__generation(profiled->space) : 0;
}

static void prepare_export(struct registry *registry, struct target *target,
                           struct profiled_target *profiled)
{
        if (!registry->exporter)
                return;
        profiled->otlp = otlp_target__new(target->pid, registry->config.interval_ms,
                                          proc_process__start_code(target->pid));
        if (!profiled->otlp)
                log_warning("PID %d: out of memory: not exported", (int)target->pid);
        else if (profiled->context.process.published_at)
                otlp_target__update_resource(profiled->otlp, &profiled->context.process);
}

struct perf_sampler_config profiled_target__perf_config(const struct profd_config *config)
{
        return (struct perf_sampler_config){
            .period_ns = (uint64_t)config->interval_ms * 1000000u,
            .stack_bytes = PERF_SAMPLER_STACK_BYTES,
            .ring_pages = PERF_SAMPLER_RING_PAGES,
        };
}

int profiled_target__check_perf(const struct profd_config *config)
{
        struct perf_sampler_config perf = profiled_target__perf_config(config);
        int r = perf_sampler__probe(&perf);

        if (r < 0)
                return log_error_errno(r,
                                       "--sampler=perf: perf_event_open refused (needs CAP_PERFMON "
                                       "or CAP_SYS_ADMIN, or kernel.perf_event_paranoid <= 1)");
        return 0;
}

/* Running threads of a native process are sampled by the kernel at their
 * CPU-time ticks (no stop, no run-queue bias: engine/sampler.c); a Python
 * process keeps the ptrace stops, which copy its interpreter's data in the
 * same instant as its stack.  A refusal leaves the target to the stops. */
static void choose_sampler(struct registry *registry, struct target *target)
{
        const struct profd_config *config = &registry->config;
        struct profiled_target *profiled = target->owner;
        struct perf_sampler_config perf = profiled_target__perf_config(config);
        int r;

        if (config->sampler == SAMPLER_PTRACE || config->command == COMMAND_DUMP ||
            profiled->python) {
                if (config->sampler != SAMPLER_PTRACE && config->command != COMMAND_DUMP)
                        log_info("PID %d: a Python process: sampled by ptrace stops",
                                 (int)target->pid);
                target__stop_perf(target);
                return;
        }
        r = target__start_perf(target, &perf);
        if (r == 0) {
                log_debug("PID %d: sampled by perf_event_open (task clock, every %lld ms of CPU)",
                          (int)target->pid, (long long)config->interval_ms);
                return;
        }
        if (config->sampler == SAMPLER_PERF)
                log_warning_errno(r, "PID %d: perf_event_open refused: sampled by ptrace stops",
                                  (int)target->pid);
        else
                log_info_errno(r, "PID %d: perf_event_open refused: sampled by ptrace stops",
                               (int)target->pid);
}

/* What each part of a target's set-up cost the tracer thread, for the -vv
 * line (bench/event_latency.py --steps sums them). */
enum setup_part {
        PART_MAPS,
        PART_SPACE,
        PART_UNWINDER,
        PART_PYTHON,
        PART_CONTEXT,
        PART_EXPORT,
        PART_N
};

static const char *const setup_part_names[PART_N] = {"maps read", "ELF report", "unwinder",
                                                     "Python",    "context",    "export"};

/* `off_tracer`: the maps part was the maps reader's wait, not the
 * tracer's, and is not in the total. */
static void log_setup(const struct target *target, const uint64_t at_ns[PART_N + 1],
                      bool off_tracer)
{
        char parts[256] = "";
        size_t len = 0;

        for (int i = 0; i < PART_N && len < sizeof(parts); i++)
                len += (size_t)snprintf(
                    parts + len, sizeof(parts) - len, "%s%s %llu us", i ? ", " : "",
                    i == PART_MAPS && off_tracer ? "maps wait off the tracer" : setup_part_names[i],
                    (unsigned long long)(at_ns[i + 1] - at_ns[i]) / 1000);
        log_debug("PID %d: set up in %llu us (%s)", (int)target->pid,
                  (unsigned long long)(at_ns[PART_N] - at_ns[off_tracer ? PART_SPACE : 0]) / 1000,
                  parts);
}

/* The set-up from the maps text (`maps`, `len` bytes, ownership passes;
 * NULL when `read_error` < 0: the target then goes without symbols and
 * native unwinding, as any part that cannot be set up).  at_ns[PART_MAPS]
 * and at_ns[PART_SPACE] bound how the text was got. */
static int prepare_with_maps(struct registry *registry, struct target *target, int read_error,
                             char *maps, size_t len, uint64_t at_ns[PART_N + 1], bool off_tracer)
{
        _cleanup_free_ char *text = maps;
        struct profiled_target *profiled = calloc(1, sizeof(*profiled));

        if (!profiled)
                return -ENOMEM;
        if (read_error >= 0)
                profiled->space = address_space__new_with_maps(
                    registry->symbolizer, target->mem_pid, take_ptr(text), len);
        at_ns[PART_UNWINDER] = monotonic_ns();
        if (profiled->space)
                profiled->unwinder = native_unwinder__new(profiled->space, target->mem_pid);
        if (!profiled->unwinder)
                log_warning("PID %d: native unwinding unavailable (no ELF modules found)",
                            (int)target->pid);
        (void)location_cache__init(&profiled->locations, LOCATION_CACHE_SLOTS);
        if (registry->builder)
                sample_recorder__add_main_mapping(&registry->recorder, profiled->space,
                                                  proc_process__start_code(target->mem_pid));
        at_ns[PART_PYTHON] = monotonic_ns();
        profiled->python = py_process__new(target->mem_pid, profiled->space, &registry->py_binaries,
                                           &registry->py_scratch);
        for (size_t i = 0; profiled->python && i < target->n_threads; i++)
                py_process__prepare(profiled->python, target, target->threads[i]);
        at_ns[PART_CONTEXT] = profiled->last_refresh_ns = profiled->last_check_ns = monotonic_ns();
        profiled->python_tried_generation = profiled_target__maps_generation(profiled);
        profiled->python_tried_ns = profiled->last_refresh_ns;
        if (!profiled->python && target->execed)
                profiled->python_retry_until_ns = profiled->last_refresh_ns + PYTHON_RETRY_NS;
        target->owner = profiled;
        context_reader__init(&profiled->context, target->pid);
        size_t maps_len = 0;
        const char *maps_text =
            profiled->space ? address_space__maps_text(profiled->space, &maps_len) : NULL;
        context_reader__refresh(&profiled->context, target, profiled->last_refresh_ns, true,
                                profiled_target__maps_generation(profiled), maps_text, maps_len);
        at_ns[PART_EXPORT] = monotonic_ns();
        prepare_export(registry, target, profiled);
        choose_sampler(registry, target);
        at_ns[PART_N] = monotonic_ns();
        log_setup(target, at_ns, off_tracer); /* what a new target costs the tracer */
        return 0;
}

int profiled_target__prepare(struct registry *registry, struct target *target)
{
        uint64_t at_ns[PART_N + 1];
        char *maps = NULL;
        size_t len = 0;
        int r;

        target->setup_serial = 0;
        at_ns[PART_MAPS] = monotonic_ns();
        r = proc_maps__read(target->mem_pid, &maps, &len);
        at_ns[PART_SPACE] = monotonic_ns();
        return prepare_with_maps(registry, target, r, maps, len, at_ns, false);
}

int profiled_target__ask_setup(struct registry *registry, struct target *target, uint64_t now_ns)
{
        uint64_t serial = ++registry->maps_serial;

        if (!maps_reader__ask(&registry->maps_reader, target->mem_pid, serial))
                return profiled_target__prepare(registry, target);
        target->setup_serial = serial;
        target->setup_asked_ns = now_ns;
        return 0;
}

bool profiled_target__setup_awaited(const struct target *target, uint64_t now_ns)
{
        return target->setup_serial && now_ns - target->setup_asked_ns < MAPS_ANSWER_TIMEOUT_NS;
}

void profiled_target__retry_python(struct registry *registry, struct target *target,
                                   uint64_t now_ns)
{
        struct profiled_target *profiled = target->owner;
        uint64_t generation;

        if (!profiled || profiled->python || now_ns >= profiled->python_retry_until_ns)
                return;
        generation = profiled_target__maps_generation(profiled);
        if (generation == profiled->python_tried_generation &&
            now_ns - profiled->python_tried_ns < PYTHON_RETRY_EVERY_NS)
                return;
        profiled->python_tried_generation = generation;
        profiled->python_tried_ns = now_ns;
        profiled->python = py_process__new(target->mem_pid, profiled->space, &registry->py_binaries,
                                           &registry->py_scratch);
        for (size_t i = 0; profiled->python && i < target->n_threads; i++)
                py_process__prepare(profiled->python, target, target->threads[i]);
        if (profiled->python)
                choose_sampler(registry, target); /* a Python process now: ptrace stops */
}

bool profiled_target__maps_awaited(const struct profiled_target *profiled, uint64_t now_ns)
{
        return profiled->maps_asked_serial &&
               now_ns - profiled->maps_asked_ns < MAPS_ANSWER_TIMEOUT_NS;
}

void profiled_target__ask_maps(struct registry *registry, struct target *target, uint64_t now_ns)
{
        struct profiled_target *profiled = target->owner;
        uint64_t serial = ++registry->maps_serial;

        if (!maps_reader__ask(&registry->maps_reader, target->mem_pid, serial)) {
                profiled->maps_asked_serial = 0;
                (void)address_space__refresh(profiled->space);
                return;
        }
        profiled->maps_asked_serial = serial;
        profiled->maps_asked_ns = now_ns;
}

/* The target whose set-up waits for `reply`, if any: it is set up now,
 * and the events that came meanwhile are answered before the next. */
static bool set_up_from(struct registry *registry, struct maps_reply *reply)
{
        struct tthread *thread;
        struct target *target = target_set__find(&registry->targets, reply->pid, &thread);
        uint64_t at_ns[PART_N + 1];

        if (!target || target->owner || target->gone || target->releasing ||
            target->setup_serial != reply->serial)
                return false;
        target->setup_serial = 0;
        at_ns[PART_MAPS] = target->setup_asked_ns;
        at_ns[PART_SPACE] = monotonic_ns();
        event_pump__busy(registry, "set-up");
        (void)prepare_with_maps(registry, target, reply->error, reply->text, reply->len, at_ns,
                                true);
        event_pump__wait(registry, 0);
        return true;
}

/* The target that asked for `reply`, if it still waits for that one. */
static struct profiled_target *asker_of(struct registry *registry, const struct maps_reply *reply)
{
        struct tthread *thread;
        struct target *target = target_set__find(&registry->targets, reply->pid, &thread);
        struct profiled_target *profiled = target ? target->owner : NULL;

        return profiled && profiled->space && profiled->maps_asked_serial == reply->serial
                   ? profiled
                   : NULL;
}

void profiled_target__take_maps(struct registry *registry)
{
        struct maps_reply reply;

        while (maps_reader__take(&registry->maps_reader, &reply)) {
                if (set_up_from(registry, &reply))
                        continue;
                struct profiled_target *profiled = asker_of(registry, &reply);

                if (!profiled || reply.error < 0) {
                        free(reply.text);
                        if (profiled)
                                profiled->maps_asked_serial = 0;
                        continue;
                }
                profiled->maps_asked_serial = 0;
                (void)address_space__apply_maps(profiled->space, reply.text, reply.len);
        }
}

void profiled_target__follow_memory_pid(struct target *target)
{
        struct profiled_target *profiled = target->owner;

        log_info("PID %d: its main thread has exited; reading it through thread %d",
                 (int)target->pid, (int)target->mem_pid);
        if (!profiled)
                return;
        if (profiled->space && address_space__set_pid(profiled->space, target->mem_pid) < 0)
                log_warning("PID %d: out of memory: debuginfo under its root not found",
                            (int)target->pid);
        if (profiled->python)
                py_process__set_pid(profiled->python, target->mem_pid);
}

void profiled_target__flush(struct registry *registry, struct target *target, uint64_t tick_ns,
                            bool force, bool last)
{
        struct profiled_target *profiled = target->owner;
        uint64_t flush_ns = (uint64_t)registry->config.export.flush_interval_ms * 1000000u;

        if (!profiled || !profiled->otlp || !registry->exporter)
                return;
        otlp_target__after_tick(profiled->otlp, registry->exporter, tick_ns, flush_ns, force);
        if (!last)
                return;
        registry->export_encode_ns += profiled->otlp->encode_ns;
        otlp_target__free(profiled->otlp);
        profiled->otlp = NULL;
}

void profiled_target__release(struct registry *registry, struct target *target)
{
        target->setup_serial = 0;  /* a set-up asked before an exec is not for the new program */
        target__stop_perf(target); /* chosen again if it is prepared again */
        profiled_target__flush(registry, target, 0, true, true);
        profiled_target__free(target);
}

void profiled_target__free(struct target *target)
{
        struct profiled_target *profiled = target->owner;

        if (!profiled)
                return;
        otlp_target__free(profiled->otlp);
        context_reader__clear(&profiled->context);
        location_cache__release(&profiled->locations);
        py_process__free(profiled->python);
        native_unwinder__free(profiled->unwinder);
        address_space__free(profiled->space);
        free(profiled);
        target->owner = NULL;
}
