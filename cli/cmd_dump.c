/* cmd_dump.c — see cmd_dump.h.
 *
 * What a thread-sample becomes here: a deep copy of its frames (function,
 * file, line, module, kind) and labels (name, state, syscall, Python thread
 * name and id, trace/span ids), because the sampler reuses its buffers on
 * the next tick and the Python strings belong to the target's caches.  Each process
 * also keeps the list of all its threads at the tick, so a thread the tick
 * could not sample (it ran during the lock-free blocked-stack check) is
 * still listed, marked "not sampled", rather than silently missing.
 * Such a thread, or a tick that sampled no thread at all, gets more ticks
 * (DUMP_MAX_TICKS in all, cmd_dump__complete): a dump of a busy target no
 * longer fails now and then with "no thread could be sampled".
 *
 * Output order: processes as given on the command line, threads by OS id
 * (so the main thread, whose id is the pid, comes first). */
#include "cli/cmd_dump.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "attach/target.h"
#include "cli/stack_frames.h"
#include "cli/syscall_names.h"
#include "util/json_text.h"
#include "pprof/sample_recorder.h"
#include "unwind/stack_merge.h"
#include "util/array.h"
#include "util/cleanup.h"
#include "util/log.h"

#define DUMP_MAX_FRAMES 4096
/* Ticks a dump may take: more than one only while a thread it lists has
 * not been sampled (a thread that ran during both checks of its blocked
 * stack is skipped for that tick).  The ticks come DUMP_INTERVAL_MS apart. */
#define DUMP_MAX_TICKS 20

struct dump_frame {
        char *function, *file, *module;
        int64_t line;
        uint64_t pc;
        bool python, inlined;
};

struct dump_thread {
        pid_t pid, tid;
        char name[16];
        char python_name[64];   /* threading.Thread.name, "" when unknown */
        char asyncio_task[128]; /* the running asyncio task's name, "" when none */
        bool sampled;
        bool blocked;
        char state[16]; /* running, runnable or blocked (sample_record) */
        long syscall_nr;
        bool has_thread_id;
        int64_t thread_id; /* Python threading.get_ident() */
        char trace_id[33], span_id[17];
        bool truncated;
        size_t n_frames, capacity;
        struct dump_frame *frames;
};

struct dump_process {
        pid_t pid;
        char comm[16];
};

struct cmd_dump {
        bool json;
        bool out_of_memory;
        unsigned int ticks; /* seen so far (cmd_dump__complete) */
        size_t n_threads, threads_capacity;
        struct dump_thread *threads;
        size_t n_processes, processes_capacity;
        struct dump_process *processes;
};

struct cmd_dump *cmd_dump__new(bool json)
{
        struct cmd_dump *dump = calloc(1, sizeof(*dump));

        if (dump)
                dump->json = json;
        return dump;
}

static void dump_thread__release(struct dump_thread *thread)
{
        for (size_t i = 0; i < thread->n_frames; i++) {
                free(thread->frames[i].function);
                free(thread->frames[i].file);
                free(thread->frames[i].module);
        }
        free(thread->frames);
}

void cmd_dump__free(struct cmd_dump *dump)
{
        if (!dump)
                return;
        for (size_t i = 0; i < dump->n_threads; i++)
                dump_thread__release(&dump->threads[i]);
        free(dump->threads);
        free(dump->processes);
        free(dump);
}

static struct dump_thread *cmd_dump__thread(struct cmd_dump *dump, pid_t pid, pid_t tid)
{
        for (size_t i = 0; i < dump->n_threads; i++)
                if (dump->threads[i].pid == pid && dump->threads[i].tid == tid)
                        return &dump->threads[i];
        if (ARRAY_RESERVE(dump->threads, dump->threads_capacity, dump->n_threads + 1) < 0)
                return NULL;
        struct dump_thread *thread = &dump->threads[dump->n_threads++];
        *thread = (struct dump_thread){.pid = pid, .tid = tid, .syscall_nr = -1};
        return thread;
}

/* First sample of a process: note it and list all its threads. */
static void cmd_dump__note_process(struct cmd_dump *dump, const struct target *target)
{
        for (size_t i = 0; i < dump->n_processes; i++)
                if (dump->processes[i].pid == target->pid)
                        return;
        if (ARRAY_RESERVE(dump->processes, dump->processes_capacity, dump->n_processes + 1) < 0) {
                dump->out_of_memory = true;
                return;
        }
        struct dump_process *process = &dump->processes[dump->n_processes++];
        process->pid = target->pid;
        memcpy(process->comm, target->comm, sizeof(process->comm));
        for (size_t i = 0; i < target->n_threads; i++) {
                if (target->threads[i]->exited)
                        continue; /* a leader that called pthread_exit: no stack left */
                struct dump_thread *thread =
                    cmd_dump__thread(dump, target->pid, target->threads[i]->tid);
                if (!thread) {
                        dump->out_of_memory = true;
                        return;
                }
                memcpy(thread->name, target->threads[i]->name, sizeof(thread->name));
        }
}

static char *copy_string(const char *text, bool *failed)
{
        char *copy = strdup(text ? text : "");

        *failed |= !copy;
        return copy;
}

static bool dump_thread__add_frame(void *arg, const struct stack_frame *frame)
{
        struct dump_thread *thread = arg;
        bool failed = false;

        if (thread->n_frames == DUMP_MAX_FRAMES) {
                thread->truncated = true;
                return false;
        }
        if (ARRAY_RESERVE(thread->frames, thread->capacity, thread->n_frames + 1) < 0)
                return false;
        struct dump_frame *copy = &thread->frames[thread->n_frames++];
        *copy = (struct dump_frame){
            .function = copy_string(frame->function, &failed),
            .file = copy_string(frame->file, &failed),
            .module = copy_string(frame->module, &failed),
            .line = frame->line,
            .pc = frame->pc,
            .python = frame->python,
            .inlined = frame->inlined,
        };
        return !failed;
}

static void copy_id(char *out, size_t size, const char *id)
{
        if (id)
                snprintf(out, size, "%s", id);
}

static void cmd_dump__on_sample(void *arg, const struct sample_event *event)
{
        struct cmd_dump *dump = arg;
        const struct sample_record *record = event->record;
        struct dump_thread *thread;

        cmd_dump__note_process(dump, event->target);
        thread = cmd_dump__thread(dump, record->pid, record->tid);
        if (!thread || thread->sampled) {
                dump->out_of_memory |= !thread;
                return;
        }
        thread->sampled = true;
        snprintf(thread->name, sizeof(thread->name), "%s", record->thread_name);
        snprintf(thread->python_name, sizeof(thread->python_name), "%s",
                 record->python_thread_name ? record->python_thread_name : "");
        copy_id(thread->asyncio_task, sizeof(thread->asyncio_task), record->asyncio_task);
        thread->blocked = strcmp(record->thread_state, "blocked") == 0;
        snprintf(thread->state, sizeof(thread->state), "%s", record->thread_state);
        thread->syscall_nr = event->syscall_nr;
        thread->has_thread_id = record->merged && record->merged->has_thread_ident;
        thread->thread_id = record->thread_id;
        copy_id(thread->trace_id, sizeof(thread->trace_id), record->trace_id);
        copy_id(thread->span_id, sizeof(thread->span_id), record->span_id);
        thread->truncated = stack_frames__truncated(event);
        stack_frames__walk(event, dump_thread__add_frame, thread);
}

/* After each tick: done once every thread listed has a sample, or after
 * DUMP_MAX_TICKS; a tick that sampled nothing at all is retried too. */
static bool cmd_dump__complete(void *arg)
{
        struct cmd_dump *dump = arg;

        if (++dump->ticks >= DUMP_MAX_TICKS || dump->out_of_memory)
                return true;
        if (dump->n_processes == 0)
                return false;
        for (size_t i = 0; i < dump->n_threads; i++)
                if (!dump->threads[i].sampled)
                        return false;
        return true;
}

struct sample_sink cmd_dump__sink(struct cmd_dump *dump)
{
        return (struct sample_sink){
            .on_sample = cmd_dump__on_sample, .complete = cmd_dump__complete, .arg = dump};
}

static int compare_threads(const void *a, const void *b)
{
        const struct dump_thread *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* ------------------------------------------------------------ text */

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

static void print_frame_text(const struct dump_frame *frame, FILE *out)
{
        fprintf(out, "    %s", frame->function);
        if (*frame->file && frame->line > 0)
                fprintf(out, " (%s:%lld)", frame->file, (long long)frame->line);
        else if (*frame->file)
                fprintf(out, " (%s)", frame->file);
        else if (*frame->module)
                fprintf(out, " (%s)", base_name(frame->module));
        if (frame->inlined)
                fputs(" [inlined]", out);
        fputc('\n', out);
}

static void print_thread_text(const struct dump_thread *thread, FILE *out)
{
        char buffer[32];

        fprintf(out, "Thread %d \"%s\"", (int)thread->tid, thread->name);
        if (!thread->sampled) {
                fputs(" (not sampled: it was running during the check; dump again)\n\n", out);
                return;
        }
        if (thread->blocked && thread->syscall_nr >= 0)
                fprintf(out, " blocked in %s",
                        syscall_names__get(thread->syscall_nr, buffer, sizeof(buffer)));
        else
                fprintf(out, " %s", thread->state);
        if (thread->python_name[0])
                fprintf(out, "  python_name=\"%s\"", thread->python_name);
        if (thread->has_thread_id)
                fprintf(out, "  python_thread_id=%lld", (long long)thread->thread_id);
        if (thread->asyncio_task[0])
                fprintf(out, "  asyncio_task=\"%s\"", thread->asyncio_task);
        if (thread->trace_id[0] && thread->span_id[0])
                fprintf(out, "  trace_id=%s span_id=%s", thread->trace_id, thread->span_id);
        fputc('\n', out);
        for (size_t i = 0; i < thread->n_frames; i++)
                print_frame_text(&thread->frames[i], out);
        if (thread->truncated)
                fputs("    ... (stack truncated)\n", out);
        fputc('\n', out);
}

static void print_text(const struct cmd_dump *dump, FILE *out)
{
        for (size_t p = 0; p < dump->n_processes; p++) {
                const struct dump_process *process = &dump->processes[p];
                size_t n = 0;
                for (size_t i = 0; i < dump->n_threads; i++)
                        n += dump->threads[i].pid == process->pid;
                fprintf(out, "Process %d \"%s\": %zu threads\n\n", (int)process->pid, process->comm,
                        n);
                for (size_t i = 0; i < dump->n_threads; i++)
                        if (dump->threads[i].pid == process->pid)
                                print_thread_text(&dump->threads[i], out);
        }
}

/* ------------------------------------------------------------ JSON */

static void print_frame_json(const struct dump_frame *frame, FILE *out)
{
        fputs("{\"function\":", out);
        json_text__string(out, frame->function);
        fputs(",\"file\":", out);
        json_text__string(out, frame->file);
        if (frame->line > 0)
                fprintf(out, ",\"line\":%lld", (long long)frame->line);
        else
                fputs(",\"line\":null", out);
        fprintf(out, ",\"kind\":\"%s\",\"inlined\":%s", frame->python ? "python" : "native",
                frame->inlined ? "true" : "false");
        if (frame->python) {
                fputs(",\"address\":null,\"module\":null}", out);
                return;
        }
        fprintf(out, ",\"address\":\"0x%llx\",\"module\":", (unsigned long long)frame->pc);
        json_text__string(out, frame->module);
        fputc('}', out);
}

static void print_optional_id(const char *key, const char *id, FILE *out)
{
        fprintf(out, ",\"%s\":", key);
        if (id[0])
                json_text__string(out, id);
        else
                fputs("null", out);
}

static void print_thread_json(const struct dump_thread *thread, FILE *out)
{
        char buffer[32];

        fprintf(out, "{\"tid\":%d,\"name\":", (int)thread->tid);
        json_text__string(out, thread->name);
        fprintf(out, ",\"sampled\":%s,\"state\":", thread->sampled ? "true" : "false");
        if (thread->sampled)
                json_text__string(out, thread->state);
        else
                fputs("null", out);
        fputs(",\"syscall\":", out);
        if (thread->sampled && thread->blocked && thread->syscall_nr >= 0)
                json_text__string(out,
                                  syscall_names__get(thread->syscall_nr, buffer, sizeof(buffer)));
        else
                fputs("null", out);
        fputs(",\"python_name\":", out);
        if (thread->python_name[0])
                json_text__string(out, thread->python_name);
        else
                fputs("null", out);
        if (thread->has_thread_id)
                fprintf(out, ",\"python_thread_id\":%llu",
                        (unsigned long long)(uint64_t)thread->thread_id);
        else
                fputs(",\"python_thread_id\":null", out);
        print_optional_id("asyncio_task", thread->asyncio_task, out);
        print_optional_id("trace_id", thread->span_id[0] ? thread->trace_id : "", out);
        print_optional_id("span_id", thread->trace_id[0] ? thread->span_id : "", out);
        fprintf(out, ",\"truncated\":%s,\"frames\":[", thread->truncated ? "true" : "false");
        for (size_t i = 0; i < thread->n_frames; i++) {
                if (i)
                        fputc(',', out);
                print_frame_json(&thread->frames[i], out);
        }
        fputs("]}", out);
}

static void print_json(const struct cmd_dump *dump, FILE *out)
{
        fputs("{\"processes\":[", out);
        for (size_t p = 0; p < dump->n_processes; p++) {
                const struct dump_process *process = &dump->processes[p];
                bool first = true;
                fprintf(out, "%s{\"pid\":%d,\"name\":", p ? "," : "", (int)process->pid);
                json_text__string(out, process->comm);
                fputs(",\"threads\":[", out);
                for (size_t i = 0; i < dump->n_threads; i++) {
                        if (dump->threads[i].pid != process->pid)
                                continue;
                        if (!first)
                                fputc(',', out);
                        first = false;
                        print_thread_json(&dump->threads[i], out);
                }
                fputs("]}", out);
        }
        fputs("]}\n", out);
}

int cmd_dump__print(struct cmd_dump *dump, FILE *out)
{
        qsort(dump->threads, dump->n_threads, sizeof(*dump->threads), compare_threads);
        if (dump->out_of_memory)
                log_warning("out of memory: the dump is incomplete");
        if (dump->json)
                print_json(dump, out);
        else
                print_text(dump, out);
        if (fflush(out) != 0 || ferror(out)) {
                log_error("cannot write the dump: %s", strerror(errno));
                return 1;
        }
        if (dump->n_processes == 0) {
                log_error("no thread could be sampled");
                return 1;
        }
        return 0;
}
