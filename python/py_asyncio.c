/* py_asyncio.c — which asyncio task a sampled thread is running.
 *
 * Why: an asyncio thread runs many tasks in turn; the label
 * asyncio.task.name says which one a sample belongs to.  The task changes
 * every few microseconds in a busy loop, so what says which task runs is
 * copied in the stop window, with the thread state, in the same
 * process_vm_readv: no extra system call.
 *
 * How (3.14+): the thread state holds the running task
 * (_PyThreadStateImpl.asyncio_running_task, at the offset the _asyncio
 * module's debug offsets give): one word.
 *
 * How (3.9–3.13): _asyncio keeps {loop: task} in the dict
 * _asyncio._current_tasks, entered and left at each step of a task.  The
 * dict's keys pointer and the keys object it named at the last stop
 * (PY_ASYNCIO_KEYS_COPY bytes; a few loops take ~200) are copied in the
 * thread state's read; the dict is resized every few switches (each step
 * deletes its entry and inserts it again), and when the copied pointer
 * names another keys object, that one is copied right away, still in the
 * stop window (py_asyncio__capture_keys).  After the resume the entry
 * whose loop runs on this thread (loop._thread_id, remembered per loop and read again every
 * PY_ASYNCIO_LOOP_TTL_NS) gives the task.
 *
 * The task's name is TaskObj.task_name: a str, or (3.12+) the int N of a
 * default "Task-N" until get_name() formats it.  A request's task ends
 * (and is freed) right after its last computation, before a lagging
 * daemon reads it (1-3% of uvicorn + FastAPI samples lost their name so):
 * once the task is known from the copy, still in the stop window, its
 * task_name and task_context words are copied, then the first
 * PY_ASYNCIO_NAME_COPY bytes of the name object and the Context's head
 * (py_asyncio__capture_task: two more process_vm_readv, four iovecs), and
 * the name is decoded from that copy (only the type's flags are read
 * after, from a type object that outlives its instances).  A longer name,
 * or a task found only after the resume (up to 3.13, a loop whose thread
 * was not known yet), is read live as before.  Everything is bounded and checked: a word that is
 * not an aligned pointer, a type that is neither str nor int, a string that does not decode, all
 * mean "no label". */
#include "python/py_asyncio.h"

#include <stdio.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_dict.h"
#include "python/py_long.h"
#include "python/py_string.h"
#include "python/py_task_span.h"
#include "util/clock.h"

#define DICT_KEYS_AT          32
#define OBJECT_TYPE_AT        8
#define TYPE_FLAGS_AT         168
#define TPFLAGS_LONG_SUBCLASS (1ul << 24)
#define TPFLAGS_UNICODE       (1ul << 28)
/* Looking for the module walks sys.modules (~1 read per module): a process
 * without asyncio is asked again after 1 s, then twice as late each time,
 * up to every 32 s. */
#define PY_ASYNCIO_RETRY_NS     (1000ull * 1000 * 1000)
#define PY_ASYNCIO_RETRY_MAX_NS (32000ull * 1000 * 1000)
#define PY_ASYNCIO_LOOP_TTL_NS  (1000ull * 1000 * 1000)

static bool plausible(uint64_t address)
{
        return address >= 4096 && !(address & 7) && address < (1ull << 47);
}

static bool read_word(pid_t pid, uint64_t address, uint64_t *value)
{
        return plausible(address) &&
               remote_memory__read(pid, address, value, sizeof(*value)) == sizeof(*value);
}

void py_asyncio__init(struct py_asyncio *a, pid_t pid, const struct py_runtime *runtime,
                      struct string_pool *strings)
{
        *a = (struct py_asyncio){.pid = pid, .runtime = runtime, .strings = strings};
        a->have_offsets = py_asyncio_offsets__measured(&runtime->offsets->asyncio, &a->offsets);
}

size_t py_asyncio__bytes(void)
{
        return 8 + 2 * PY_ASYNCIO_KEYS_COPY + PY_ASYNCIO_TASK_WORDS + PY_ASYNCIO_NAME_COPY +
               PY_TASK_SPAN_CONTEXT_COPY;
}

void py_asyncio__capture_keys(struct py_asyncio *a, struct capture *capture)
{
        const uint8_t *word;
        uint64_t keys;
        size_t len = PY_ASYNCIO_KEYS_COPY;

        if (!a->current_tasks || a->offsets.thread_task ||
            !(word = capture__interp_at(capture, a->current_tasks + DICT_KEYS_AT, 8)))
                return;
        memcpy(&keys, word, sizeof(keys));
        if (keys == a->keys || !plausible(keys))
                return;
        a->keys = keys;
        (void)capture__copy_interp(capture, &keys, &len, 1);
}

size_t py_asyncio__regions(const struct py_asyncio *a, const struct py_thread *t,
                           uint64_t *addresses, size_t *lens)
{
        size_t n = 0;

        if (!a->have_offsets)
                return 0;
        if (a->offsets.thread_task) {
                addresses[n] = t->tstate + a->offsets.thread_task;
                lens[n++] = 8;
                return n;
        }
        if (!a->current_tasks)
                return 0;
        addresses[n] = a->current_tasks + DICT_KEYS_AT;
        lens[n++] = 8;
        if (a->keys) {
                addresses[n] = a->keys;
                lens[n++] = PY_ASYNCIO_KEYS_COPY;
        }
        return n;
}

/* Finds what is still unknown, when the retry wait is over. */
static void look_up(struct py_asyncio *a, uint64_t now_ns)
{
        static const struct backoff_policy policy = {.first_ns = PY_ASYNCIO_RETRY_NS,
                                                     .max_ns = PY_ASYNCIO_RETRY_MAX_NS};
        uint64_t module, dict;

        if (!backoff__attempt(&a->look_up, &policy, now_ns))
                return;
        if (!(module = py_runtime__module(a->pid, a->runtime, "_asyncio")))
                return; /* asyncio not imported (yet) */
        if (!a->have_offsets) {
                if (!a->runtime->offsets->asyncio.module_debug ||
                    py_asyncio_offsets__from_debug(a->pid, &a->offsets) < 0)
                        return;
                a->have_offsets = true;
        }
        if (!a->offsets.thread_task && !a->current_tasks &&
            (dict = py_runtime__module_dict(a->pid, a->runtime, "_asyncio")))
                a->current_tasks =
                    py_dict__find(a->pid, a->runtime->offsets, dict, "_current_tasks");
}

void py_asyncio__prepare(struct py_asyncio *a, uint64_t now_ns)
{
        if (!a->have_offsets || (!a->offsets.thread_task && !a->current_tasks))
                look_up(a, now_ns);
}

/* The remembered loop._thread_id of `loop`, when read less than
 * PY_ASYNCIO_LOOP_TTL_NS ago (or at any time when `any_age`): no read. */
static const struct py_asyncio_loop *known_loop(const struct py_asyncio *a, uint64_t loop,
                                                uint64_t now_ns, bool any_age)
{
        for (size_t i = 0; i < PY_ASYNCIO_LOOPS; i++)
                if (a->loops[i].loop == loop &&
                    (any_age || now_ns - a->loops[i].read_ns < PY_ASYNCIO_LOOP_TTL_NS))
                        return &a->loops[i];
        return NULL;
}

uint64_t py_asyncio__loop_thread(struct py_asyncio *a, uint64_t loop, uint64_t now_ns)
{
        const struct py_offsets *o = a->runtime->offsets;
        const struct py_asyncio_loop *known = known_loop(a, loop, now_ns, false);
        struct py_asyncio_loop *slot;
        uint8_t object[PY_LONG_READ_MAX];
        uint64_t id;

        if (known)
                return known->ident;
        slot = &a->loops[a->next_loop];
        a->next_loop = (a->next_loop + 1) % PY_ASYNCIO_LOOPS;
        *slot = (struct py_asyncio_loop){.loop = loop, .read_ns = now_ns};
        id = py_dict__instance_attribute(a->pid, o, loop, "_thread_id");
        if (plausible(id) &&
            remote_memory__read(a->pid, id, object, sizeof(object)) == sizeof(object))
                (void)py_long__decode(o, object, sizeof(object), &slot->ident);
        return slot->ident;
}

/* Up to 3.13: the task of this thread's loop in the copied keys object;
 * a loop's thread is looked up only when `may_read` (else only the
 * remembered ones count: the stop window reads nothing more). */
static uint64_t task_from_dict(struct py_asyncio *a, const struct py_thread *t,
                               const struct capture *capture, uint64_t now_ns, bool may_read)
{
        const uint8_t *word = capture__interp_at(capture, a->current_tasks + DICT_KEYS_AT, 8);
        const uint8_t *keys;
        struct py_dict_table table;
        uint64_t copied_keys;

        if (!word)
                return 0;
        memcpy(&copied_keys, word, sizeof(copied_keys));
        keys = capture__interp_at(capture, copied_keys, PY_ASYNCIO_KEYS_COPY);
        if (!keys ||
            !py_dict__table(a->runtime->offsets, copied_keys, keys, PY_ASYNCIO_KEYS_COPY, &table) ||
            table.entries < copied_keys)
                return 0;
        for (size_t i = 0; i < table.n; i++) {
                uint64_t at = table.entries - copied_keys + i * table.entry_size, loop, task;
                if (at + table.entry_size > PY_ASYNCIO_KEYS_COPY)
                        break;
                memcpy(&loop, keys + at + table.key_at, sizeof(loop));
                memcpy(&task, keys + at + table.value_at, sizeof(task));
                if (!plausible(loop) || !plausible(task))
                        continue;
                /* In the stop window a loop's thread as last read, however
                 * old (a loop rarely moves; the read after the resume
                 * checks again, and a task it finds that the window did
                 * not copy is read live). */
                const struct py_asyncio_loop *known = known_loop(a, loop, now_ns, !may_read);
                if (known ? known->ident == t->pthread
                          : may_read && py_asyncio__loop_thread(a, loop, now_ns) == t->pthread)
                        return task;
        }
        return 0;
}

/* The task `t` was running at the stop, from the copy, or 0. */
static uint64_t running_task(struct py_asyncio *a, const struct py_thread *t,
                             const struct capture *capture, uint64_t now_ns, bool may_read)
{
        uint64_t task = 0;

        if (!a->have_offsets)
                return 0;
        if (a->offsets.thread_task) {
                const uint8_t *word =
                    capture__interp_at(capture, t->tstate + a->offsets.thread_task, 8);
                if (word)
                        memcpy(&task, word, sizeof(task));
        } else if (a->current_tasks) {
                task = task_from_dict(a, t, capture, now_ns, may_read);
        }
        return plausible(task) ? task : 0;
}

uint64_t py_asyncio__capture_task(struct py_asyncio *a, const struct py_thread *t,
                                  struct capture *capture)
{
        uint64_t task = running_task(a, t, capture, monotonic_ns(), false), words[2];
        uint64_t at = task + a->offsets.task_name, addresses[2];
        size_t len = PY_ASYNCIO_TASK_WORDS, lens[2], n = 0;
        const uint8_t *copied;

        if (!task || capture->interp.n_regions >= CAPTURE_INTERP_REGIONS ||
            capture__copy_interp(capture, &at, &len, 1) < (ssize_t)len ||
            !(copied = capture__interp_at(capture, at, len)))
                return 0;
        memcpy(words, copied, sizeof(words));
        /* The Context first: a name near the end of a mapping may read
         * short, and a short read ends the copy there. */
        if (plausible(words[1])) {
                addresses[n] = words[1];
                lens[n++] = PY_TASK_SPAN_CONTEXT_COPY;
        }
        if (plausible(words[0])) {
                addresses[n] = words[0];
                lens[n++] = PY_ASYNCIO_NAME_COPY;
        }
        if (n > CAPTURE_INTERP_REGIONS - capture->interp.n_regions)
                n = CAPTURE_INTERP_REGIONS - capture->interp.n_regions;
        if (n)
                (void)capture__copy_interp(capture, addresses, lens, n);
        return capture__interp_at(capture, words[1], PY_TASK_SPAN_CONTEXT_COPY) ? words[1] : 0;
}

uint64_t py_asyncio__copied_context(const struct py_asyncio *a, const struct capture *capture,
                                    uint64_t task)
{
        const uint8_t *words =
            task ? capture__interp_at(capture, task + a->offsets.task_name, PY_ASYNCIO_TASK_WORDS)
                 : NULL;
        uint64_t context = 0;

        if (words)
                memcpy(&context, words + 8, sizeof(context));
        return plausible(context) ? context : 0;
}

/* Type flags, remembered for the few types a name has (str, int). */
static bool type_flags(struct py_asyncio *a, uint64_t type, uint64_t *flags)
{
        for (size_t i = 0; i < PY_ASYNCIO_NAME_TYPES; i++)
                if (a->name_types[i].type == type) {
                        *flags = a->name_types[i].flags;
                        return true;
                }
        if (!read_word(a->pid, type + TYPE_FLAGS_AT, flags))
                return false;
        a->name_types[a->next_name_type] = (struct py_asyncio_type){.type = type, .flags = *flags};
        a->next_name_type = (a->next_name_type + 1) % PY_ASYNCIO_NAME_TYPES;
        return true;
}

/* The name from the stop window's copy of the name object, or NULL when
 * it was not copied or not whole (then it is read live). */
static const char *name_from_copy(struct py_asyncio *a, const struct capture *capture,
                                  uint64_t object)
{
        const struct py_offsets *o = a->runtime->offsets;
        const uint8_t *copy = capture__interp_at(capture, object, PY_ASYNCIO_NAME_COPY);
        char text[PY_ASYNCIO_NAME_CHARS];
        uint64_t type, flags, n;

        if (!copy)
                return NULL;
        memcpy(&type, copy + OBJECT_TYPE_AT, sizeof(type));
        if (!plausible(type) || !type_flags(a, type, &flags))
                return NULL;
        if (flags & TPFLAGS_UNICODE)
                return py_string__complete(copy, PY_ASYNCIO_NAME_COPY, o) &&
                               py_string__decode(copy, PY_ASYNCIO_NAME_COPY, o, text,
                                                 sizeof(text)) > 0
                           ? string_pool__intern(a->strings, text)
                           : NULL;
        if (!(flags & TPFLAGS_LONG_SUBCLASS) || !py_long__decode(o, copy, PY_ASYNCIO_NAME_COPY, &n))
                return NULL;
        snprintf(text, sizeof(text), "Task-%llu", (unsigned long long)n);
        return string_pool__intern(a->strings, text);
}

const char *py_asyncio__name_text(struct py_asyncio *a, uint64_t object)
{
        const struct py_offsets *o = a->runtime->offsets;
        char text[PY_ASYNCIO_NAME_CHARS];
        uint8_t number[PY_LONG_READ_MAX];
        uint64_t type, flags, n;

        if (!read_word(a->pid, object + OBJECT_TYPE_AT, &type) ||
            !read_word(a->pid, type + TYPE_FLAGS_AT, &flags))
                return NULL;
        if (flags & TPFLAGS_UNICODE)
                return py_string__read(a->pid, object, o, text, sizeof(text)) > 0
                           ? string_pool__intern(a->strings, text)
                           : NULL;
        if (!(flags & TPFLAGS_LONG_SUBCLASS) ||
            remote_memory__read(a->pid, object, number, sizeof(number)) != sizeof(number) ||
            !py_long__decode(o, number, sizeof(number), &n))
                return NULL;
        snprintf(text, sizeof(text), "Task-%llu", (unsigned long long)n);
        return string_pool__intern(a->strings, text);
}

const char *py_asyncio__task_name(struct py_asyncio *a, const struct py_thread *t,
                                  const struct capture *capture, uint64_t now_ns, uint64_t *out)
{
        const uint8_t *words;
        uint64_t task, object;
        struct py_asyncio_name *slot;
        const char *name;

        *out = 0;
        py_asyncio__prepare(a, now_ns);
        if (!(task = running_task(a, t, capture, now_ns, true)))
                return NULL;
        /* The stop window's copy when there is one: the task may have
         * ended, and its memory been reused, since. */
        words = capture__interp_at(capture, task + a->offsets.task_name, PY_ASYNCIO_TASK_WORDS);
        if (words)
                memcpy(&object, words, sizeof(object));
        else if (!read_word(a->pid, task + a->offsets.task_name, &object))
                return NULL;
        if (!plausible(object))
                return NULL;
        *out = task;
        if (words && (name = name_from_copy(a, capture, object)))
                return name;
        slot = &a->names[((task >> 4) * 0x9e3779b97f4a7c15ull) >> 58];
        if (slot->task != task || slot->object != object || !slot->name)
                *slot = (struct py_asyncio_name){
                    .task = task, .object = object, .name = py_asyncio__name_text(a, object)};
        return slot->name;
}
