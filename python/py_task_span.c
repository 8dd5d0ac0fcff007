/* py_task_span.c — which span an asyncio task is in.
 *
 * Why: OpenTelemetry keeps the current span in a contextvar, and each
 * asyncio task runs in its own contextvars.Context.  A writer that
 * publishes one slot per thread names the span of whichever task attached
 * last: task A attaches, awaits; task B attaches, awaits; A resumes and
 * the slot still says B.  The task's own context says A.
 *
 * Choice: read the running task's context instead of having the writer
 * follow task switches, which would cost every task step (thousands per
 * second) a write, with no hook for it before 3.14's context watchers;
 * this costs only samples: ~24 small reads each, after the resume (3.11,
 * three tasks in SDK spans: 7 -> 31 process_vm_readv per sample, ~100 us
 * more daemon CPU per sample).  The running task is known from the stop
 * window (py_asyncio), which also copies the task's Context pointer and
 * the Context's ctx_vars: the HAMT of the task's variables at the stop.
 * A HAMT is immutable, but a context drops it for a new one whenever the
 * task sets a variable (a span starts or ends), and the dropped one is
 * freed and its memory reused at once (pymalloc's free lists are LIFO:
 * the next request's HAMT, dict and span land at the same addresses, so
 * no pointer fingerprint tells them apart).  So the lookup goes through
 * the copied HAMT, and then the context is read again: alive, same type,
 * same ctx_vars, or the sample gets no span (STALE).  That keeps a late
 * read from naming a span the task is no longer in, or another task's,
 * but a late read still loses the span: copying the whole chain down to
 * the ids (~9 more dependent reads) in the stop window would not.
 * Nothing is cached: a HAMT or span freed when a span ends is soon
 * reallocated at the same address with another span in it.
 *
 * How: Context.ctx_vars (a HAMT: 3.9–3.14 the same three node kinds,
 * recognised by their type's tp_name and then by type address) is
 * searched for the ContextVar that opentelemetry.context's
 * _RUNTIME_CONTEXT._current_context holds, by a bounded walk of every
 * node (a context holds a handful of variables).  Its value is an
 * OpenTelemetry Context, a dict whose "current-span-<uuid>" entry holds
 * the span; the span's _context is a SpanContext, a tuple (trace_id,
 * span_id, ...) of ints (3.14 tuples cache their hash before the items).  Every read is bounded,
 * every pointer checked. */
#include "python/py_task_span.h"

#include <stdio.h>
#include <string.h>

#include "attach/remote_memory.h"
#include "python/py_dict.h"
#include "python/py_string.h"

#define OBJECT_TYPE_AT  8
#define TYPE_NAME_AT    24
#define CONTEXT_VARS_AT 24 /* PyContext.ctx_vars */
#define HAMT_ROOT_AT    16 /* PyHamtObject.h_root */
#define NODE_SIZE_AT    16 /* ob_size of bitmap and collision nodes */
#define NODE_ITEMS_AT   32 /* their key/value pairs */
#define ARRAY_ITEMS_AT  16 /* array node: 32 children */
#define ARRAY_CHILDREN  32
#define NODE_SLOTS_MAX  64
#define HAMT_NODES_MAX  64
#define HAMT_DEPTH_MAX  8
#define LONG_SIZE_AT    16
#define LONG_DIGITS_AT  24
#define SPAN_KEY        "current-span"

enum node_kind { NODE_BITMAP, NODE_ARRAY, NODE_COLLISION, NODE_UNKNOWN };

static bool plausible(uint64_t address)
{
        return address >= 4096 && !(address & 7) && address < (1ull << 47);
}

static bool read_word(pid_t pid, uint64_t address, uint64_t *value)
{
        return plausible(address) &&
               remote_memory__read(pid, address, value, sizeof(*value)) == sizeof(*value);
}

void py_task_span__init(struct py_task_span *s, pid_t pid, const struct py_runtime *runtime)
{
        *s = (struct py_task_span){.pid = pid, .runtime = runtime};
}

/* opentelemetry.context is looked for after 1 s, 2 s... up to every 32 s. */
static const struct backoff_policy look_up_policy = {.first_ns = 1000ull * 1000 * 1000,
                                                     .max_ns = 32000ull * 1000 * 1000};

static void look_up(struct py_task_span *s, uint64_t now_ns)
{
        const struct py_offsets *o = s->runtime->offsets;
        uint64_t dict, runtime_context;

        if (!backoff__attempt(&s->look_up, &look_up_policy, now_ns))
                return;
        if (!(dict = py_runtime__module_dict(s->pid, s->runtime, "opentelemetry.context")) ||
            !(runtime_context = py_dict__find(s->pid, o, dict, "_RUNTIME_CONTEXT")))
                return;
        s->var = py_dict__instance_attribute(s->pid, o, runtime_context, "_current_context");
}

static enum node_kind node_kind(struct py_task_span *s, uint64_t node)
{
        static const char *const names[] = {"hamt_bitmap_node", "hamt_array_node",
                                            "hamt_collision_node"};
        uint64_t type, name;
        char text[24];

        if (!read_word(s->pid, node + OBJECT_TYPE_AT, &type))
                return NODE_UNKNOWN;
        for (size_t i = 0; i < 3; i++)
                if (s->node_types[i] == type)
                        return (enum node_kind)i;
        if (!read_word(s->pid, type + TYPE_NAME_AT, &name) || name < 4096 ||
            remote_memory__read(s->pid, name, text, sizeof(text)) != sizeof(text))
                return NODE_UNKNOWN;
        text[sizeof(text) - 1] = '\0';
        for (size_t i = 0; i < 3; i++) {
                if (strcmp(text, names[i]) == 0 && !s->node_types[i]) {
                        s->node_types[i] = type;
                        return (enum node_kind)i;
                }
        }
        return NODE_UNKNOWN;
}

struct search {
        struct py_task_span *s;
        uint64_t key, value;
        size_t nodes;
};

/* Depth-first through every node: a bitmap or collision node holds
 * (key, value) pairs, a NULL key meaning the value is a child node; an
 * array node holds up to 32 children. */
static bool search_node(struct search *q, uint64_t node, size_t depth)
{
        uint64_t items[NODE_SLOTS_MAX], size;
        enum node_kind kind;
        size_t n;

        if (depth > HAMT_DEPTH_MAX || q->nodes++ >= HAMT_NODES_MAX ||
            (kind = node_kind(q->s, node)) == NODE_UNKNOWN)
                return false;
        if (kind == NODE_ARRAY) {
                n = ARRAY_CHILDREN;
                if (remote_memory__read(q->s->pid, node + ARRAY_ITEMS_AT, items, n * 8) !=
                    (ssize_t)(n * 8))
                        return false;
                for (size_t i = 0; i < n; i++)
                        if (items[i] && plausible(items[i]) && search_node(q, items[i], depth + 1))
                                return true;
                return false;
        }
        if (!read_word(q->s->pid, node + NODE_SIZE_AT, &size) || size > NODE_SLOTS_MAX ||
            (size & 1))
                return false;
        n = (size_t)size;
        if (n &&
            remote_memory__read(q->s->pid, node + NODE_ITEMS_AT, items, n * 8) != (ssize_t)(n * 8))
                return false;
        for (size_t i = 0; i + 1 < n; i += 2) {
                if (items[i] == q->key) {
                        q->value = items[i + 1];
                        return true;
                }
                if (!items[i] && kind == NODE_BITMAP && plausible(items[i + 1]) &&
                    search_node(q, items[i + 1], depth + 1))
                        return true;
        }
        return false;
}

struct span_key {
        pid_t pid;
        const struct py_offsets *o;
        uint64_t span;
};

static bool find_span_key(void *arg, uint64_t key, uint64_t value)
{
        struct span_key *k = arg;
        char text[64];

        if (py_string__read(k->pid, key, k->o, text, sizeof(text)) > 0 &&
            strncmp(text, SPAN_KEY "-", sizeof(SPAN_KEY)) == 0) {
                k->span = value;
                return false;
        }
        return true;
}

/* A non-negative int of at most 128 bits as 2 * bytes hex digits. */
static bool long_hex(struct py_task_span *s, uint64_t object, size_t bytes, char *out)
{
        const struct py_offsets *o = s->runtime->offsets;
        uint8_t data[LONG_DIGITS_AT + 5 * 4];
        unsigned __int128 value = 0;
        uint64_t size;
        size_t n;

        if (!plausible(object) ||
            remote_memory__read(s->pid, object, data, sizeof(data)) != (ssize_t)sizeof(data))
                return false;
        memcpy(&size, data + LONG_SIZE_AT, sizeof(size));
        if (o->long_tagged) {
                if ((size & 3) >= 2)
                        return false;
                n = (size & 3) == 1 ? 0 : (size_t)(size >> 3);
        } else {
                if ((int64_t)size < 0)
                        return false;
                n = (size_t)size;
        }
        if (n > 5)
                return false;
        for (size_t i = n; i-- > 0;) {
                uint32_t digit;
                memcpy(&digit, data + LONG_DIGITS_AT + 4 * i, sizeof(digit));
                if (digit >> 30 || (value >> (128 - 30)) != 0)
                        return false;
                value = value << 30 | digit;
        }
        if (bytes < 16 && (value >> (8 * bytes)) != 0)
                return false;
        for (size_t i = 0; i < 2 * bytes; i++)
                out[2 * bytes - 1 - i] = "0123456789abcdef"[(unsigned)(value >> (4 * i)) & 15];
        out[2 * bytes] = '\0';
        return value != 0;
}

static enum py_task_span_result decode(struct py_task_span *s, uint64_t root)
{
        const struct py_offsets *o = s->runtime->offsets;
        struct search q = {.s = s, .key = s->var};
        struct span_key k = {.pid = s->pid, .o = o};
        uint64_t span_context, items[2];

        if (!search_node(&q, root, 0))
                return q.nodes < HAMT_NODES_MAX ? PY_TASK_SPAN_NONE : PY_TASK_SPAN_UNKNOWN;
        if (!plausible(q.value) || py_dict__visit(s->pid, o, q.value, find_span_key, &k) < 0)
                return PY_TASK_SPAN_UNKNOWN;
        if (!k.span)
                return PY_TASK_SPAN_NONE;
        span_context = py_dict__instance_attribute(s->pid, o, k.span, "_context");
        if (!plausible(span_context) || remote_memory__read(s->pid, span_context + o->tuple_items,
                                                            items, sizeof(items)) != sizeof(items))
                return PY_TASK_SPAN_UNKNOWN;
        if (!long_hex(s, items[0], 16, s->trace_id) || !long_hex(s, items[1], 8, s->span_id))
                return PY_TASK_SPAN_NONE; /* the invalid span (zero ids) */
        return PY_TASK_SPAN_FOUND;
}

/* Whether the Context at `context` is still the object the stop window
 * copied, alive (a freed object's refcount is 0 until its memory is
 * reused: the allocator's link overwrites the GC header before it), and
 * still holds the same variables: then the HAMT they are in, immutable,
 * was held alive all along the read (short of the context dropping it and
 * a new HAMT landing at the same address in between). */
static bool still_held(struct py_task_span *s, uint64_t context, const uint8_t *copy)
{
        uint8_t now[PY_TASK_SPAN_CONTEXT_COPY];
        uint32_t refcnt;

        if (remote_memory__read(s->pid, context, now, sizeof(now)) != (ssize_t)sizeof(now))
                return false;
        memcpy(&refcnt, now, sizeof(refcnt)); /* 3.12+: the low half is the count */
        return refcnt != 0 && memcmp(now + OBJECT_TYPE_AT, copy + OBJECT_TYPE_AT, 8) == 0 &&
               memcmp(now + CONTEXT_VARS_AT, copy + CONTEXT_VARS_AT, 8) == 0;
}

enum py_task_span_result py_task_span__read(struct py_task_span *s, uint64_t context,
                                            const uint8_t *copy, uint64_t now_ns,
                                            const char **trace_id, const char **span_id)
{
        enum py_task_span_result result;
        uint64_t vars, root;

        if (!s->var)
                look_up(s, now_ns);
        if (!s->var)
                return PY_TASK_SPAN_UNKNOWN;
        if (copy)
                memcpy(&vars, copy + CONTEXT_VARS_AT, sizeof(vars));
        else if (!read_word(s->pid, context + CONTEXT_VARS_AT, &vars))
                return PY_TASK_SPAN_UNKNOWN;
        if (!read_word(s->pid, vars + HAMT_ROOT_AT, &root))
                return copy ? PY_TASK_SPAN_STALE : PY_TASK_SPAN_UNKNOWN;
        result = decode(s, root);
        *trace_id = s->trace_id;
        *span_id = s->span_id;
        if (copy && !still_held(s, context, copy))
                return PY_TASK_SPAN_STALE;
        return result;
}
