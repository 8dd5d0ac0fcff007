/* py_asyncio_tasks.c — every asyncio task of a process, for `dump`.
 *
 * Why: `dump` shows what each thread runs, but an asyncio program's work
 * sits mostly in tasks that wait (on an Event, a gather, a socket); like
 * `python -m asyncio pstree`, dump lists them all with their state and
 * what each awaits.
 *
 * Where the tasks are:
 *   - 3.14+: _asyncio links every task into a list of the thread that
 *     created it (_PyThreadStateImpl.asyncio_tasks_head) and, once that
 *     thread has exited, of the interpreter; the offsets come from the
 *     module's .AsyncioDebug section (py_asyncio_offsets.c);
 *   - 3.9 and 3.11: asyncio.tasks._all_tasks, 3.13: asyncio.tasks._scheduled_tasks
 *     (WeakSets: their `data` set holds weakrefs to the tasks) and
 *     asyncio.tasks._eager_tasks (a set of the eager tasks running their
 *     first step).
 * A task's state is FutureObj.fut_state (0 pending, 1 cancelled, 2
 * finished), its thread its loop's _thread_id (py_asyncio).
 *
 * The await chain: the task's coroutine, its frame (embedded in the
 * coroutine object; 3.9: the frame object cr_frame), and while suspended
 * in an await, the object it awaits, on the top of its value stack (3.9:
 * f_stacktop[-1]; 3.11/3.13: localsplus[stacktop - 1]; 3.14:
 * stackpointer[-1], a tagged reference; 3.15 keeps one more item above
 * it); followed while that object is a coroutine of the same
 * type, PY_TASK_FRAMES_MAX deep at most, a coroutine seen twice ending it.
 * The layout of futures, coroutines and their frames is not in any debug
 * offsets CPython publishes before 3.14 nor in 3.14's for the value stack:
 * it was measured on each build (ctypes: the words equal to id(loop),
 * id(coro.cr_code), id(coro.cr_await), the byte that reads 0/1/2 in a
 * pending/cancelled/finished future, the words of a 3.9 frame object
 * pointing into it).  3.10, 3.12 and free-threaded builds list nothing.
 *
 * The running task: the one its loop runs at the read (3.14+ the thread
 * state's running task, else _asyncio._current_tasks), read after the
 * others: a busy loop may have switched since.
 *
 * Who waits on whom: a task's fut_waiter is the future it waits on; when
 * that is a listed task, or a gather's future whose `_children` holds
 * listed tasks, those are awaited by it.
 *
 * Everything is read after the resume.  A loop that waits (its thread
 * blocked in epoll) does not change its tasks meanwhile; a running loop
 * may, and then a task can be missed or a chain cut short, never read out
 * of bounds: every pointer is checked, every loop bounded. */
#include "python/py_asyncio_tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_dict.h"
#include "python/py_runtime.h"
#include "util/cleanup.h"

#define OBJECT_TYPE_AT     8
#define TYPE_BASICSIZE_AT  32
#define TASK_LOOP_AT       16 /* FutureObj.fut_loop, first after the header */
#define WEAKREF_OBJECT_AT  16 /* PyWeakReference.wr_object */
#define SET_MASK_AT        32 /* PySetObject.mask, then .table */
#define SET_ENTRIES_MAX    8192
#define LIST_SIZE_AT       16 /* PyListObject ob_size, then ob_item */
#define CHILDREN_MAX       256
#define STACK_DEPTH_MAX    4096 /* value-stack slots believed */
#define STACKREF_TAG_BITS  3ull
#define FRAME_HEAD_MAX     128
#define COROUTINE_READ_MAX 256
#define TASK_READ_MAX      1024 /* py_asyncio_offsets.c TASK_SIZE_MAX */

struct tasks {
        struct py_asyncio *a;
        const struct py_offsets *o;
        const struct py_await_layout *l;
        struct py_code_cache *codes;
        uint64_t now_ns;
        struct py_task *v;
        size_t n;
};

static bool plausible(uint64_t address)
{
        return address >= 4096 && !(address & 7) && address < (1ull << 47);
}

static bool read_word(pid_t pid, uint64_t address, uint64_t *value)
{
        return plausible(address) &&
               remote_memory__read(pid, address, value, sizeof(*value)) == sizeof(*value);
}

static struct py_task *tasks__find(struct tasks *t, uint64_t address)
{
        for (size_t i = 0; i < t->n; i++)
                if (t->v[i].address == address)
                        return &t->v[i];
        return NULL;
}

/* The line a frame is at, from its copied head. */
static int64_t frame_line(const struct tasks *t, const uint8_t *frame, uint64_t executable,
                          struct py_code *code)
{
        const struct py_offsets *o = t->o;
        uint64_t instr, base = executable + o->code_adaptive;
        int32_t lasti;

        if (o->model == PY_FRAMES_OBJECTS) {
                memcpy(&lasti, frame + o->frame_instr, sizeof(lasti));
                return py_code__line(code, o->line_format, lasti);
        }
        memcpy(&instr, frame + o->frame_instr, sizeof(instr));
        return instr >= base ? py_code__line(code, o->line_format, (int64_t)(instr - base) / 2)
                             : -1;
}

/* Where the frame's awaited object is, from its copied head, or 0. */
static uint64_t awaited_slot(const struct tasks *t, const uint8_t *frame, uint64_t at)
{
        const struct py_await_layout *l = t->l;
        uint64_t bottom = at + l->bottom, stack;
        int32_t top;

        if (l->frame_object)
                memcpy(&bottom, frame + l->bottom, sizeof(bottom));
        if (l->stack_pointer) {
                memcpy(&stack, frame + l->stack, sizeof(stack));
                return stack >= bottom + 8 * l->slot && stack <= bottom + 8 * STACK_DEPTH_MAX
                           ? stack - 8 * l->slot
                           : 0;
        }
        memcpy(&top, frame + l->stack, sizeof(top));
        if (top < (int32_t)l->slot || top > STACK_DEPTH_MAX)
                return 0;
        return bottom + 8 * (uint64_t)(top - (int32_t)l->slot);
}

/* The frame of `coro`, appended to task's chain when its type is *type
 * (or any, *type 0: then set); false when it does not decode.  One read
 * (3.11+: the coroutine with its frame; 3.9 two).  *awaited: what it
 * awaits, or 0. */
static bool tasks__add_frame(struct tasks *t, struct py_task *task, uint64_t coro, uint64_t *type,
                             uint64_t *awaited)
{
        const struct py_offsets *o = t->o;
        const struct py_await_layout *l = t->l;
        uint8_t object[COROUTINE_READ_MAX], head[FRAME_HEAD_MAX];
        size_t len = l->frame_object ? l->frame + 8 : l->frame + l->head;
        const uint8_t *frame = object + l->frame;
        uint64_t executable, at = coro + l->frame, slot, word;
        struct py_code *code;

        *awaited = 0;
        if (len > sizeof(object) || l->head > sizeof(head) || o->frame_code + 8 > l->head ||
            o->frame_instr + 8 > l->head || l->stack + 8 > l->head ||
            (l->frame_object && l->bottom + 8 > l->head) ||
            remote_memory__read(t->a->pid, coro, object, len) != (ssize_t)len)
                return false;
        memcpy(&word, object + OBJECT_TYPE_AT, 8);
        if (!plausible(word) || (*type && word != *type))
                return false;
        *type = word;
        if (l->frame_object) {
                memcpy(&at, object + l->frame, 8);
                if (!plausible(at) ||
                    remote_memory__read(t->a->pid, at, head, l->head) != (ssize_t)l->head)
                        return false;
                frame = head;
        }
        memcpy(&executable, frame + o->frame_code, 8);
        if (o->tagged_executable)
                executable &= ~STACKREF_TAG_BITS;
        if (!plausible(executable) || !(code = py_code__get(t->codes, executable, t->now_ns)))
                return false;
        task->frames[task->n_frames++] = (struct py_task_frame){
            .function = code->name,
            .file = code->filename,
            .line = frame_line(t, frame, executable, code),
        };
        if ((slot = awaited_slot(t, frame, at)) && read_word(t->a->pid, slot, awaited))
                *awaited &= ~STACKREF_TAG_BITS;
        return true;
}

/* The await chain of a pending task, outermost first as it is followed
 * (each coroutine of the type of the first), then reversed: innermost
 * first, as a stack reads. */
static void tasks__chain(struct tasks *t, struct py_task *task, uint64_t coro)
{
        uint64_t seen[PY_TASK_FRAMES_MAX], type = 0;

        while (plausible(coro)) {
                bool again = false;
                for (size_t i = 0; i < task->n_frames && !again; i++)
                        again = seen[i] == coro;
                if (again)
                        break;
                if (task->n_frames == PY_TASK_FRAMES_MAX) {
                        task->truncated = true;
                        break;
                }
                seen[task->n_frames] = coro;
                if (!tasks__add_frame(t, task, coro, &type, &coro))
                        break;
        }
        for (size_t i = 0; i < task->n_frames / 2; i++) {
                struct py_task_frame f = task->frames[i];
                task->frames[i] = task->frames[task->n_frames - 1 - i];
                task->frames[task->n_frames - 1 - i] = f;
        }
}

/* Adds the task at `address` once; `thread`: the ident of the thread
 * whose list holds it (3.14+), 0 when unknown. */
static void tasks__add(struct tasks *t, uint64_t address, uint64_t thread)
{
        const struct py_asyncio_offsets *ao = &t->a->offsets;
        static const char *const states[] = {"pending", "cancelled", "done"};
        uint8_t object[TASK_READ_MAX];
        uint64_t type, size, loop, name, coro;
        int32_t state;

        if (t->n == PY_TASKS_MAX || !plausible(address) || tasks__find(t, address) ||
            ao->task_size > sizeof(object) || ao->task_name + 8 > ao->task_size ||
            ao->task_coro + 8 > ao->task_size || t->l->waiter + 8 > ao->task_size ||
            t->l->state + 4 > ao->task_size ||
            remote_memory__read(t->a->pid, address, object, ao->task_size) !=
                (ssize_t)ao->task_size)
                return;
        memcpy(&type, object + OBJECT_TYPE_AT, 8);
        memcpy(&state, object + t->l->state, sizeof(state));
        if (!read_word(t->a->pid, type + TYPE_BASICSIZE_AT, &size) || size < ao->task_size ||
            size > 4 * ao->task_size || state < 0 || state > 2)
                return;
        struct py_task *task = &t->v[t->n++];
        *task = (struct py_task){.address = address, .state = states[state], .thread = thread};
        memcpy(&name, object + ao->task_name, 8);
        memcpy(&loop, object + TASK_LOOP_AT, 8);
        memcpy(&task->waiter, object + t->l->waiter, 8);
        memcpy(&coro, object + ao->task_coro, 8);
        if (plausible(name))
                task->name = py_asyncio__name_text(t->a, name);
        if (plausible(loop)) {
                uint64_t ident = py_asyncio__loop_thread(t->a, loop, t->now_ns);
                if (ident)
                        task->thread = ident;
        }
        if (state == 0)
                tasks__chain(t, task, coro);
}

/* 3.14+: the tasks of the list whose head is at `head`. */
static void tasks__add_list(struct tasks *t, uint64_t head, uint64_t thread)
{
        uint64_t node;

        if (!read_word(t->a->pid, head, &node))
                return;
        for (size_t i = 0; i < PY_TASKS_MAX && node != head && plausible(node); i++) {
                tasks__add(t, node - t->a->offsets.task_node, thread);
                if (!read_word(t->a->pid, node, &node))
                        break;
        }
}

/* Up to 3.13: the tasks of a set object; `weak`: its keys are weakrefs. */
static void tasks__add_set(struct tasks *t, uint64_t set, bool weak)
{
        uint64_t head[2]; /* mask, table */
        _cleanup_free_ uint64_t *entries = NULL;

        if (!plausible(set) ||
            remote_memory__read(t->a->pid, set + SET_MASK_AT, head, sizeof(head)) != sizeof(head) ||
            head[0] >= SET_ENTRIES_MAX || ((head[0] + 1) & head[0]) || !plausible(head[1]))
                return;
        size_t n = head[0] + 1, len = n * 16;
        if (!(entries = malloc(len)) ||
            remote_memory__read(t->a->pid, head[1], entries, len) != (ssize_t)len)
                return;
        for (size_t i = 0; i < n; i++) {
                uint64_t key = entries[2 * i], task = key;
                if (!plausible(key) ||
                    (weak && !read_word(t->a->pid, key + WEAKREF_OBJECT_AT, &task)))
                        continue;
                tasks__add(t, task, 0);
        }
}

static void tasks__add_weakset(struct tasks *t, uint64_t dict, const char *name)
{
        uint64_t weakset = py_dict__find(t->a->pid, t->o, dict, name);

        if (plausible(weakset))
                tasks__add_set(t, py_dict__instance_attribute(t->a->pid, t->o, weakset, "data"),
                               true);
}

static void awaited_by(struct py_task *awaited, uint64_t by)
{
        if (awaited && awaited->n_awaited_by < PY_TASK_AWAITED_BY_MAX)
                awaited->awaited_by[awaited->n_awaited_by++] = by;
}

/* Who waits on whom, from each pending task's fut_waiter. */
static void tasks__link(struct tasks *t)
{
        for (size_t i = 0; i < t->n; i++) {
                uint64_t waiter = t->v[i].waiter, list, head[2];
                struct py_task *direct;
                if (!plausible(waiter))
                        continue;
                if ((direct = tasks__find(t, waiter))) {
                        awaited_by(direct, t->v[i].address);
                        continue;
                }
                list = py_dict__instance_attribute(t->a->pid, t->o, waiter, "_children");
                if (!plausible(list) ||
                    remote_memory__read(t->a->pid, list + LIST_SIZE_AT, head, sizeof(head)) !=
                        sizeof(head) ||
                    head[0] > CHILDREN_MAX || !plausible(head[1]))
                        continue;
                uint64_t children[CHILDREN_MAX];
                if (head[0] && remote_memory__read(t->a->pid, head[1], children, 8 * head[0]) !=
                                   (ssize_t)(8 * head[0]))
                        continue;
                for (size_t c = 0; c < head[0]; c++)
                        awaited_by(tasks__find(t, children[c]), t->v[i].address);
        }
}

static bool mark_running(void *arg, uint64_t key, uint64_t value)
{
        struct py_task *task = tasks__find(arg, value);

        if (task)
                task->running = true;
        return true;
}

/* The task each loop runs at this read: 3.14+ the thread states' running
 * task, else the _asyncio._current_tasks dict ({loop: task}). */
static void tasks__mark_running(struct tasks *t, const struct py_threads *threads)
{
        uint64_t address;
        struct py_task *task;

        if (t->a->offsets.thread_task) {
                for (size_t i = 0; i < threads->n; i++)
                        if (read_word(t->a->pid, threads->v[i].tstate + t->a->offsets.thread_task,
                                      &address) &&
                            (task = tasks__find(t, address)))
                                task->running = true;
        } else if (plausible(t->a->current_tasks)) {
                (void)py_dict__visit(t->a->pid, t->o, t->a->current_tasks, mark_running, t);
        }
}

int py_asyncio_tasks__list(struct py_asyncio *a, struct py_code_cache *codes,
                           const struct py_threads *threads, uint64_t now_ns, struct py_task **out)
{
        struct tasks t = {.a = a, .o = a->runtime->offsets, .codes = codes, .now_ns = now_ns};
        uint64_t dict;

        *out = NULL;
        if (t.o->asyncio.awaiting.state)
                t.l = &t.o->asyncio.awaiting;
        py_asyncio__prepare(a, now_ns);
        if (!t.l || t.o->free_threaded || !a->have_offsets)
                return 0;
        if (!(t.v = calloc(PY_TASKS_MAX, sizeof(*t.v))))
                return -ENOMEM;
        if (a->offsets.task_node) {
                uint64_t interp = py_runtime__first_interpreter(a->pid, a->runtime);
                for (size_t i = 0; i < threads->n; i++)
                        tasks__add_list(&t, threads->v[i].tstate + a->offsets.thread_tasks_head,
                                        threads->v[i].pthread);
                if (plausible(interp))
                        tasks__add_list(&t, interp + a->offsets.interp_tasks_head, 0);
        } else if ((dict = py_runtime__module_dict(t.a->pid, t.a->runtime, "asyncio.tasks"))) {
                tasks__add_weakset(
                    &t, dict, t.o->asyncio.scheduled_tasks ? "_scheduled_tasks" : "_all_tasks");
                if (t.o->asyncio.scheduled_tasks)
                        tasks__add_set(&t, py_dict__find(a->pid, t.o, dict, "_eager_tasks"), false);
        }
        tasks__link(&t);
        tasks__mark_running(&t, threads);
        *out = t.v;
        return (int)t.n;
}
