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
#include "engine/profiled_target.h"
#include "python/py_asyncio_tasks.h"
#include "python/py_process.h"
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

/* An asyncio task (python/py_asyncio_tasks.h), copied. */
struct dump_task {
        uint64_t address;
        char *name;        /* NULL when unreadable */
        const char *state; /* a static string */
        bool running;      /* its loop was running a step of it */
        uint64_t thread;   /* threading.get_ident() of its loop's thread, 0 unknown */
        size_t n_frames;   /* innermost first */
        struct dump_frame *frames;
        bool truncated;
        size_t n_awaited_by;
        uint64_t awaited_by[PY_TASK_AWAITED_BY_MAX];
};

struct dump_process {
        pid_t pid;
        char comm[16];
        size_t n_tasks;
        struct dump_task *tasks;
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

static void dump_process__release(struct dump_process *process)
{
        for (size_t i = 0; i < process->n_tasks; i++) {
                struct dump_task *task = &process->tasks[i];
                for (size_t f = 0; f < task->n_frames; f++) {
                        free(task->frames[f].function);
                        free(task->frames[f].file);
                }
                free(task->frames);
                free(task->name);
        }
        free(process->tasks);
}

void cmd_dump__free(struct cmd_dump *dump)
{
        if (!dump)
                return;
        for (size_t i = 0; i < dump->n_threads; i++)
                dump_thread__release(&dump->threads[i]);
        for (size_t i = 0; i < dump->n_processes; i++)
                dump_process__release(&dump->processes[i]);
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

static char *copy_string(const char *text, bool *failed);

/* Copies the tasks py_process__tasks found; false when out of memory. */
static bool dump_process__copy_tasks(struct dump_process *process, const struct py_task *tasks,
                                     size_t n)
{
        bool failed = false;

        if (!n)
                return true;
        if (!(process->tasks = calloc(n, sizeof(*process->tasks))))
                return false;
        for (size_t i = 0; i < n && !failed; i++) {
                const struct py_task *from = &tasks[i];
                struct dump_task *task = &process->tasks[process->n_tasks++];
                *task =
                    (struct dump_task){.address = from->address,
                                       .name = from->name ? copy_string(from->name, &failed) : NULL,
                                       .state = from->state,
                                       .running = from->running,
                                       .thread = from->thread,
                                       .truncated = from->truncated,
                                       .n_awaited_by = from->n_awaited_by};
                memcpy(task->awaited_by, from->awaited_by, sizeof(task->awaited_by));
                if (from->n_frames &&
                    !(task->frames = calloc(from->n_frames, sizeof(*task->frames)))) {
                        failed = true;
                        break;
                }
                for (size_t f = 0; f < from->n_frames; f++, task->n_frames++)
                        task->frames[f] = (struct dump_frame){
                            .function = copy_string(from->frames[f].function, &failed),
                            .file = copy_string(from->frames[f].file, &failed),
                            .line = from->frames[f].line,
                            .python = true,
                        };
        }
        return !failed;
}

/* After the resume, at a process's first sample: its asyncio tasks. */
static void cmd_dump__read_tasks(struct cmd_dump *dump, struct dump_process *process,
                                 const struct target *target)
{
        const struct profiled_target *profiled = target->owner;
        _cleanup_free_ struct py_task *tasks = NULL;
        int n;

        if (!profiled || !profiled->python)
                return;
        n = py_process__tasks(profiled->python, &tasks);
        if (n < 0 || !dump_process__copy_tasks(process, tasks, n > 0 ? (size_t)n : 0))
                dump->out_of_memory = true;
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
        *process = (struct dump_process){.pid = target->pid};
        memcpy(process->comm, target->comm, sizeof(process->comm));
        cmd_dump__read_tasks(dump, process, target);
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

/* The OS id of the thread whose threading.get_ident() is `ident`, or 0. */
static pid_t thread_tid(const struct cmd_dump *dump, pid_t pid, uint64_t ident)
{
        for (size_t i = 0; ident && i < dump->n_threads; i++)
                if (dump->threads[i].pid == pid && dump->threads[i].has_thread_id &&
                    (uint64_t)dump->threads[i].thread_id == ident)
                        return dump->threads[i].tid;
        return 0;
}

static const struct dump_task *find_task(const struct dump_process *process, uint64_t address)
{
        for (size_t i = 0; i < process->n_tasks; i++)
                if (process->tasks[i].address == address)
                        return &process->tasks[i];
        return NULL;
}

/* name  state  coro_a (file:line) <- coro_b (file:line)  awaited_by="x",
 * indented two more spaces per level of the await tree. */
static void print_task_text(const struct dump_process *process, const struct dump_task *task,
                            unsigned int depth, FILE *out)
{
        fprintf(out, "    %*s\"%s\" %s%s", 2 * (int)depth, "", task->name ? task->name : "?",
                task->state, task->running ? " (running)" : "");
        for (size_t f = 0; f < task->n_frames; f++) {
                const struct dump_frame *frame = &task->frames[f];
                fprintf(out, "%s%s", f ? " <- " : "  ", frame->function);
                if (frame->line > 0)
                        fprintf(out, " (%s:%lld)", frame->file, (long long)frame->line);
                else
                        fprintf(out, " (%s)", frame->file);
        }
        if (task->truncated)
                fputs(" <- ...", out);
        for (size_t i = 0; i < task->n_awaited_by; i++) {
                const struct dump_task *by = find_task(process, task->awaited_by[i]);
                fprintf(out, "%s\"%s\"",
                        i ? "," : "  awaited_by=", by && by->name ? by->name : "?");
        }
        fputc('\n', out);
}

#define TASK_TREE_DEPTH 16

/* The tasks of one loop thread, as an await tree (python -m asyncio
 * pstree): each task once, under the first task that awaits it. */
struct task_tree {
        const struct cmd_dump *dump;
        const struct dump_process *process;
        pid_t tid;   /* 0: tasks whose thread is unknown */
        bool *shown; /* per task of the process */
        FILE *out;
};

static bool task_tree__member(const struct task_tree *tree, const struct dump_task *task)
{
        return thread_tid(tree->dump, tree->process->pid, task->thread) == tree->tid;
}

/* Whether a task of this tree awaits `task`. */
static bool task_tree__awaited(const struct task_tree *tree, const struct dump_task *task)
{
        for (size_t i = 0; i < task->n_awaited_by; i++) {
                const struct dump_task *by = find_task(tree->process, task->awaited_by[i]);
                if (by && by != task && task_tree__member(tree, by))
                        return true;
        }
        return false;
}

static void task_tree__print(struct task_tree *tree, size_t t, unsigned int depth)
{
        const struct dump_process *process = tree->process;
        const struct dump_task *task = &process->tasks[t];

        tree->shown[t] = true;
        print_task_text(process, task, depth, tree->out);
        if (depth == TASK_TREE_DEPTH)
                return;
        for (size_t c = 0; c < process->n_tasks; c++) {
                const struct dump_task *child = &process->tasks[c];
                if (tree->shown[c] || !task_tree__member(tree, child))
                        continue;
                for (size_t i = 0; i < child->n_awaited_by; i++)
                        if (child->awaited_by[i] == task->address && !tree->shown[c])
                                task_tree__print(tree, c, depth + 1);
        }
}

/* After a process's threads: its tasks, one section per loop thread
 * (threads by OS id, then tasks whose thread is unknown): the tasks no
 * other awaits first, each followed by what it awaits; then any left
 * (awaiting each other in a cycle). */
static void print_tasks_text(const struct cmd_dump *dump, const struct dump_process *process,
                             FILE *out)
{
        _cleanup_free_ bool *shown = calloc(process->n_tasks ? process->n_tasks : 1, sizeof(bool));
        struct task_tree tree = {.dump = dump, .process = process, .shown = shown, .out = out};

        if (!shown)
                return;
        for (size_t i = 0; i <= dump->n_threads; i++) {
                bool header = false;
                if (i < dump->n_threads && dump->threads[i].pid != process->pid)
                        continue;
                tree.tid = i < dump->n_threads ? dump->threads[i].tid : 0;
                for (int pass = 0; pass < 2; pass++)
                        for (size_t t = 0; t < process->n_tasks; t++) {
                                const struct dump_task *task = &process->tasks[t];
                                if (shown[t] || !task_tree__member(&tree, task) ||
                                    (pass == 0 && task_tree__awaited(&tree, task)))
                                        continue;
                                if (!header && tree.tid)
                                        fprintf(out, "Tasks of the loop on thread %d:\n",
                                                (int)tree.tid);
                                else if (!header)
                                        fputs("Tasks of a loop on no known thread:\n", out);
                                header = true;
                                task_tree__print(&tree, t, 0);
                        }
                if (header)
                        fputc('\n', out);
        }
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
                print_tasks_text(dump, process, out);
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

static void print_task_json(const struct cmd_dump *dump, const struct dump_process *process,
                            const struct dump_task *task, FILE *out)
{
        pid_t tid = thread_tid(dump, process->pid, task->thread);

        fprintf(out, "{\"id\":\"0x%llx\",\"name\":", (unsigned long long)task->address);
        if (task->name)
                json_text__string(out, task->name);
        else
                fputs("null", out);
        fprintf(out, ",\"state\":\"%s\",\"running\":%s,\"thread\":", task->state,
                task->running ? "true" : "false");
        if (tid)
                fprintf(out, "%d", (int)tid);
        else
                fputs("null", out);
        fputs(",\"awaited_by\":[", out);
        for (size_t i = 0; i < task->n_awaited_by; i++)
                fprintf(out, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)task->awaited_by[i]);
        fprintf(out, "],\"truncated\":%s,\"frames\":[", task->truncated ? "true" : "false");
        for (size_t f = 0; f < task->n_frames; f++) {
                fputs(f ? ",{\"function\":" : "{\"function\":", out);
                json_text__string(out, task->frames[f].function);
                fputs(",\"file\":", out);
                json_text__string(out, task->frames[f].file);
                if (task->frames[f].line > 0)
                        fprintf(out, ",\"line\":%lld}", (long long)task->frames[f].line);
                else
                        fputs(",\"line\":null}", out);
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
                fputs("],\"tasks\":[", out);
                for (size_t t = 0; t < process->n_tasks; t++) {
                        if (t)
                                fputc(',', out);
                        print_task_json(dump, process, &process->tasks[t], out);
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
