/* py_thread_names.c — the thread.name label of Python threads.
 *
 * Why: the OS name (comm) of every threading.Thread is the interpreter's
 * own ("python3"), or from 3.14 its Python name cut to 15 bytes; users name
 * threads in Python ("payment-worker-3"), so that is the name to show.
 *
 * How: sys.modules (interp->modules) -> "threading" -> its md_dict (16) ->
 * "_active", a dict from thread ident (int) to Thread; each Thread's
 * instance attribute `_name` is the name (py_dict reads all of it).  The
 * address of _active is kept: threading never replaces that dict (after a
 * fork it clears and refills it), so later refreshes read only it and the
 * threads.  The table is re-read after the resume, never per sample: by
 * the caller, when a thread's ident is missing or has no name yet (a few
 * times, spaced out) and every PY_NAMES_REFRESH_NS for renames.  An ident
 * is remembered with the OS thread it was first seen on; pthread_t values
 * are reused, so on another OS thread the name is not trusted until the
 * next refresh.  Python threads threading does not know get an empty
 * entry, so that they do not cause a refresh per sample.  Names are capped
 * at PY_THREAD_NAME_MAX bytes, the table at PY_THREAD_NAMES_MAX threads;
 * anything unreadable leaves comm. */
#include "python/py_thread_names.h"

#include <stdlib.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_dict.h"
#include "python/py_long.h"
#include "python/py_string.h"

struct collect {
        pid_t pid;
        const struct py_offsets *o;
        const struct py_threads *threads;
        struct py_thread_name *v;
        size_t n;
};

static pid_t tid_of(const struct py_threads *threads, uint64_t ident)
{
        for (size_t i = 0; i < threads->n; i++)
                if (threads->v[i].pthread == ident)
                        return threads->v[i].tid;
        return 0;
}

static bool read_ident(pid_t pid, const struct py_offsets *o, uint64_t key, uint64_t *ident)
{
        uint8_t object[PY_LONG_READ_MAX];
        size_t size = py_long__read_size(o);

        return size <= sizeof(object) &&
               remote_memory__read(pid, key, object, size) == (ssize_t)size &&
               py_long__decode(o, object, size, ident);
}

static bool collect_thread(void *arg, uint64_t key, uint64_t thread)
{
        struct collect *c = arg;
        struct py_thread_name *entry = &c->v[c->n];
        uint64_t name;

        if (c->n >= PY_THREAD_NAMES_MAX)
                return false;
        if (!read_ident(c->pid, c->o, key, &entry->ident))
                return true;
        name = py_dict__instance_attribute(c->pid, c->o, thread, "_name");
        if (!name || py_string__read(c->pid, name, c->o, entry->name, sizeof(entry->name)) <= 0)
                return true;
        entry->tid = tid_of(c->threads, entry->ident);
        c->n++;
        return true;
}

/* sys.modules["threading"]._active, or 0. */
static uint64_t find_active(pid_t pid, const struct py_runtime *runtime)
{
        uint64_t dict = py_runtime__module_dict(pid, runtime, "threading");

        return dict ? py_dict__find(pid, runtime->offsets, dict, "_active") : 0;
}

static bool known_ident(const struct collect *c, uint64_t ident)
{
        for (size_t i = 0; i < c->n; i++)
                if (c->v[i].ident == ident)
                        return true;
        return false;
}

static int by_ident(const void *a, const void *b)
{
        const struct py_thread_name *x = a, *y = b;

        return x->ident < y->ident ? -1 : x->ident > y->ident;
}

/* The entry of `ident` in a sorted table, or NULL. */
static struct py_thread_name *entry_of(const struct py_thread_names *names, uint64_t ident)
{
        struct py_thread_name key = {.ident = ident};

        return names->n ? bsearch(&key, names->v, names->n, sizeof(*names->v), by_ident) : NULL;
}

/* Python threads threading does not list (started by _thread, in another
 * interpreter, not yet registered) get an empty name: comm is used and
 * they do not trigger a refresh each time they are sampled.  Each counts
 * the refreshes in a row that missed it (the caller retries a new thread,
 * which registers a moment after its thread state exists, a few times). */
static void add_unnamed(struct collect *c, const struct py_thread_names *old)
{
        for (size_t i = 0; i < c->threads->n && c->n < PY_THREAD_NAMES_MAX; i++) {
                const struct py_thread *t = &c->threads->v[i];
                if (!t->pthread || known_ident(c, t->pthread))
                        continue;
                const struct py_thread_name *before = entry_of(old, t->pthread);
                unsigned int misses = before && before->misses ? before->misses + 1 : 1;
                c->v[c->n++] =
                    (struct py_thread_name){.ident = t->pthread, .tid = t->tid, .misses = misses};
        }
}

void py_thread_names__refresh(struct py_thread_names *names, pid_t pid,
                              const struct py_runtime *runtime, const struct py_threads *threads,
                              uint64_t now_ns)
{
        struct collect c = {.pid = pid, .o = runtime->offsets, .threads = threads};

        names->refreshed_ns = now_ns;
        c.v = calloc(PY_THREAD_NAMES_MAX, sizeof(*c.v));
        if (!c.v)
                return;
        if (!names->active)
                names->active = find_active(pid, runtime);
        if (names->active && py_dict__visit(pid, c.o, names->active, collect_thread, &c) < 0) {
                names->active = 0; /* look it up again next time */
                c.n = 0;
        }
        add_unnamed(&c, names);
        qsort(c.v, c.n, sizeof(*c.v), by_ident); /* for py_thread_names__find */
        free(names->v);
        names->v = c.n ? realloc(c.v, c.n * sizeof(*c.v)) : NULL;
        if (!names->v)
                names->v = c.n ? c.v : (free(c.v), NULL);
        names->n = c.n;
}

const struct py_thread_name *py_thread_names__find(struct py_thread_names *names, uint64_t ident,
                                                   pid_t tid)
{
        struct py_thread_name *entry = entry_of(names, ident);

        if (!entry)
                return NULL;
        if (entry->tid == 0)
                entry->tid = tid;
        return entry->tid == tid ? entry : NULL;
}

void py_thread_names__clear(struct py_thread_names *names)
{
        free(names->v);
        memset(names, 0, sizeof(*names));
}
