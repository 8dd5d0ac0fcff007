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
 * this costs only samples.  The running task is known from the stop
 * window (py_asyncio), which also copies the task's Context pointer and
 * the Context's ctx_vars: the HAMT of the task's variables at the stop.
 * A HAMT is immutable, but a context drops it for a new one whenever the
 * task sets a variable (a span starts or ends), and the dropped one is
 * freed and its memory reused at once (pymalloc's free lists are LIFO:
 * the next request's HAMT, dict and span land at the same addresses, so
 * no pointer fingerprint tells them apart).  A read after the resume
 * that finds the context changed must give the sample no span, and a
 * daemon lagging by more than a span's last millisecond so lost 1-14% of
 * a loaded FastAPI app's in-span samples.
 *
 * So the stop window follows the chain itself, down to the two ints
 * (py_task_span__capture: ~8 more dependent process_vm_readv, one
 * region each; bench/RESULTS.md has what they add to the pause), with
 * what earlier samples of the process showed: the ContextVar's hash bits
 * (the path the full walk below took through the HAMT: one path, at most
 * WINDOW_DEPTH levels), the span key's str object and its slot in the
 * OTel Context's keys object (those dicts are built the same way each
 * time), where span._context sits in the span (3.13+: inline values;
 * 3.11/3.12: through the values pointer before the object), and the
 * span's and SpanContext's types.  Each step is checked (node type, key
 * object in its slot, span and SpanContext types) and the walk gives up
 * at the first that does not check out.  After the resume it is replayed
 * on the copy alone, the stop's truth: FOUND or NONE.
 *
 * When it gave up, or before the hints are learnt, the lookup goes
 * through the copied HAMT after the resume (~24 small reads; 3.11, three
 * tasks in SDK spans: 7 -> 31 process_vm_readv per sample, ~100 us more
 * daemon CPU), and then the context is read again: alive, same type,
 * same ctx_vars, or the sample gets no span (STALE).  That keeps a late
 * read from naming a span the task is no longer in, or another task's.
 * A span found so teaches the window's walk again (learn()).  No span or
 * id is cached: a HAMT or span freed when a span ends is soon
 * reallocated at the same address with another span in it, which is why
 * every hint is checked in the window.
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
#define DICT_KEYS_AT    32 /* PyDictObject.ma_keys; ma_values follows */

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
        uint32_t bits, known; /* the key's hash bits its path showed */
};

/* The hash bits level `depth` of a HAMT indexes by (5 a level, 2 at the
 * seventh), as a mask at bit 0. */
static uint32_t level_mask(size_t depth)
{
        return depth < 6 ? 31u : depth == 6 ? 3u : 0u;
}

/* The path went through index `index` at `depth`: 5 more bits known. */
static void path_through(struct search *q, size_t depth, uint32_t index)
{
        if (!level_mask(depth))
                return;
        q->bits |= (index & level_mask(depth)) << (5 * depth);
        q->known |= level_mask(depth) << (5 * depth);
}

/* The index of the `nth` bit set in `bitmap`, or 32. */
static uint32_t nth_bit(uint32_t bitmap, size_t nth)
{
        for (uint32_t b = 0; b < 32; b++)
                if ((bitmap >> b & 1) && nth-- == 0)
                        return b;
        return 32;
}

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
                        if (items[i] && plausible(items[i]) &&
                            search_node(q, items[i], depth + 1)) {
                                path_through(q, depth, (uint32_t)i);
                                return true;
                        }
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
                bool found = items[i] == q->key;
                if (found)
                        q->value = items[i + 1];
                else if (!items[i] && kind == NODE_BITMAP && plausible(items[i + 1]))
                        found = search_node(q, items[i + 1], depth + 1);
                if (!found)
                        continue;
                if (kind == NODE_BITMAP && read_word(q->s->pid, node + 24, &size))
                        path_through(q, depth, nth_bit((uint32_t)size, i / 2));
                return true;
        }
        return false;
}

struct span_key {
        pid_t pid;
        const struct py_offsets *o;
        uint64_t key, span;
};

static bool find_span_key(void *arg, uint64_t key, uint64_t value)
{
        struct span_key *k = arg;
        char text[64];

        if (py_string__read(k->pid, key, k->o, text, sizeof(text)) > 0 &&
            strncmp(text, SPAN_KEY "-", sizeof(SPAN_KEY)) == 0) {
                k->key = key;
                k->span = value;
                return false;
        }
        return true;
}

#define LONG_COPY (LONG_DIGITS_AT + 5 * 4)

/* A non-negative int of at most 128 bits, from the LONG_COPY bytes of
 * its object, as 2 * bytes hex digits. */
static bool long_hex_of(const struct py_offsets *o, const uint8_t *data, size_t bytes, char *out)
{
        unsigned __int128 value = 0;
        uint64_t size;
        size_t n;

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

static bool long_hex(struct py_task_span *s, uint64_t object, size_t bytes, char *out)
{
        uint8_t data[LONG_COPY];

        return plausible(object) &&
               remote_memory__read(s->pid, object, data, sizeof(data)) == (ssize_t)sizeof(data) &&
               long_hex_of(s->runtime->offsets, data, bytes, out);
}

/* Where the fallback found the span, for the stop window's walk. */
struct found {
        struct search q;
        uint64_t dict, key, span, span_context;
};

static enum py_task_span_result decode(struct py_task_span *s, uint64_t root, struct found *f)
{
        const struct py_offsets *o = s->runtime->offsets;
        struct span_key k = {.pid = s->pid, .o = o};
        uint64_t span_context, items[2];

        f->q = (struct search){.s = s, .key = s->var};
        if (!search_node(&f->q, root, 0))
                return f->q.nodes < HAMT_NODES_MAX ? PY_TASK_SPAN_NONE : PY_TASK_SPAN_UNKNOWN;
        if (!plausible(f->q.value) || py_dict__visit(s->pid, o, f->q.value, find_span_key, &k) < 0)
                return PY_TASK_SPAN_UNKNOWN;
        if (!k.span)
                return PY_TASK_SPAN_NONE;
        span_context = py_dict__instance_attribute(s->pid, o, k.span, "_context");
        if (!plausible(span_context) || remote_memory__read(s->pid, span_context + o->tuple_items,
                                                            items, sizeof(items)) != sizeof(items))
                return PY_TASK_SPAN_UNKNOWN;
        if (!long_hex(s, items[0], 16, s->trace_id) || !long_hex(s, items[1], 8, s->span_id))
                return PY_TASK_SPAN_NONE; /* the invalid span (zero ids) */
        *f = (struct found){f->q, f->q.value, k.key, k.span, span_context};
        return PY_TASK_SPAN_FOUND;
}

#define SCAN_BYTES  512 /* how far a slot is looked for */
#define SPAN_BEFORE 32  /* 3.11/3.12 keep the values pointer this far before an object */

/* The offset of the first word `value` in [at, at + SCAN_BYTES) at or
 * after `from`, or -1. */
static long scan_for(pid_t pid, uint64_t at, long from, uint64_t value)
{
        uint64_t words[SCAN_BYTES / 8];
        ssize_t got = remote_memory__read(pid, at, words, sizeof(words));

        for (long i = from / 8; got > 0 && i < got / 8; i++)
                if (words[i] == value)
                        return i * 8;
        return -1;
}

/* After a span found by the fallback (and still held): learns where the
 * stop window's walk finds it next time.  ~5 reads (3.11/3.12: up to 4
 * more), only while the hint is not ready. */
static void learn(struct py_task_span *s, const struct found *f)
{
        struct py_task_span_hint h = s->hint;
        uint64_t keys, before[SPAN_BEFORE / 8];
        long at;

        if ((h.hash_known & f->q.known & (h.hash_bits ^ f->q.bits)) != 0)
                h.hash_bits = h.hash_known = 0; /* another variable: start again */
        h.hash_bits |= f->q.bits;
        h.hash_known |= f->q.known;
        h.ready = false;
        h.key = f->key;
        if (!read_word(s->pid, f->dict + DICT_KEYS_AT, &keys) ||
            (at = scan_for(s->pid, keys, 8, f->key)) < 0 ||
            scan_for(s->pid, keys + (uint64_t)at + 8, 0, f->span) != 0 ||
            !read_word(s->pid, f->span + OBJECT_TYPE_AT, &h.span_type) ||
            !read_word(s->pid, f->span_context + OBJECT_TYPE_AT, &h.span_context_type))
                goto done;
        h.key_at = (uint32_t)at;
        h.values_at = 0;
        if ((at = scan_for(s->pid, f->span, 16, f->span_context)) >= 0) {
                h.context_at = (uint32_t)at;
                h.ready = true;
        } else if (remote_memory__read(s->pid, f->span - SPAN_BEFORE, before, sizeof(before)) ==
                   (ssize_t)sizeof(before)) {
                for (size_t i = 0; i < SPAN_BEFORE / 8 && !h.ready; i++) {
                        /* 3.12 tags a values pointer as values - 1 */
                        uint8_t tag = (before[i] & 7) == 7;
                        if (!plausible(before[i] + tag) ||
                            (at = scan_for(s->pid, before[i] + tag, 0, f->span_context)) < 0)
                                continue;
                        h.values_tag = tag;
                        h.values_at = (int32_t)(8 * i) - SPAN_BEFORE;
                        h.context_at = (uint32_t)at;
                        h.ready = true;
                }
        }
done:
        s->hint = h;
}

/* The stop window's walk, and its replay after the resume: `copy` set, a
 * range the capture does not hold yet is copied (one process_vm_readv);
 * else only the capture is read. */
struct walk {
        struct capture *copy;
        const struct capture *capture;
        size_t regions; /* regions the walk may still add */
};

/* The `need` bytes at `address`, copying `want` (>= need) when allowed. */
static const uint8_t *fetch(struct walk *w, uint64_t address, size_t want, size_t need)
{
        const uint8_t *at = capture__interp_at(w->capture, address, need);

        if (at || !w->copy || !w->regions || !plausible(address) ||
            w->copy->interp.n_regions >= CAPTURE_INTERP_REGIONS)
                return at;
        w->regions--;
        (void)capture__copy_interp(w->copy, &address, &want, 1);
        return capture__interp_at(w->capture, address, need);
}

static uint64_t word_at(const uint8_t *p, size_t offset)
{
        uint64_t v;

        memcpy(&v, p + offset, sizeof(v));
        return v;
}

#define WINDOW_DEPTH 4                            /* HAMT levels the walk follows: 16^4 variables */
#define NODE_COPY    (NODE_ITEMS_AT + 2 * 16 * 8) /* a bitmap node's 16 pairs */

/* The ContextVar's value in the HAMT at `vars`, down the one path its
 * hash gives: 1 found, 0 not there, -1 gave up. */
static int walk_hamt(struct walk *w, const struct py_task_span *s, uint64_t vars, uint64_t *value)
{
        const struct py_task_span_hint *h = &s->hint;
        const uint8_t *p = fetch(w, vars + HAMT_ROOT_AT, 8, 8);
        uint64_t node;

        if (!p)
                return -1;
        node = word_at(p, 0);
        for (size_t depth = 0; depth < WINDOW_DEPTH; depth++) {
                uint32_t mask = level_mask(depth), index, bitmap, bit;
                uint64_t type;
                if ((h->hash_known >> (5 * depth) & mask) != mask ||
                    !(p = fetch(w, node, NODE_COPY, NODE_ITEMS_AT)))
                        return -1;
                index = h->hash_bits >> (5 * depth) & mask;
                type = word_at(p, OBJECT_TYPE_AT);
                if (type && type == s->node_types[NODE_ARRAY]) {
                        if (!(p = fetch(w, node, NODE_COPY, ARRAY_ITEMS_AT + 8 * (index + 1))))
                                return -1;
                        if (!(node = word_at(p, ARRAY_ITEMS_AT + 8 * index)))
                                return 0;
                        continue;
                }
                if (!type || type != s->node_types[NODE_BITMAP])
                        return -1;
                memcpy(&bitmap, p + 24, sizeof(bitmap));
                bit = 1u << index;
                if (!(bitmap & bit))
                        return 0;
                size_t pair = (size_t)__builtin_popcount(bitmap & (bit - 1));
                if (!(p = fetch(w, node, NODE_COPY, NODE_ITEMS_AT + 16 * (pair + 1))))
                        return -1;
                uint64_t key = word_at(p, NODE_ITEMS_AT + 16 * pair);
                node = word_at(p, NODE_ITEMS_AT + 16 * pair + 8);
                if (key == s->var) {
                        *value = node;
                        return 1;
                }
                if (key)
                        return 0; /* another variable in its place */
        }
        return -1;
}

/* From the OTel Context dict down to the two ints, each step checked
 * against the hint: false when one does not check out. */
static bool walk_span(struct walk *w, struct py_task_span *s, uint64_t dict, bool publish)
{
        const struct py_offsets *o = s->runtime->offsets;
        const struct py_task_span_hint *h = &s->hint;
        const uint8_t *p, *ints[2];
        uint64_t span, values, span_context, addresses[2];

        if (!(p = fetch(w, dict, 48, 48)) || word_at(p, 40) ||
            !(p = fetch(w, word_at(p, DICT_KEYS_AT) + h->key_at, 16, 16)) ||
            word_at(p, 0) != h->key)
                return false;
        span = word_at(p, 8);
        if (h->values_at) {
                size_t len = (size_t)(OBJECT_TYPE_AT + 8 - h->values_at);
                if (!(p = fetch(w, span + h->values_at, len, len)) ||
                    word_at(p, len - 8) != h->span_type)
                        return false;
                values = word_at(p, 0) + h->values_tag;
                if (!(p = fetch(w, values + h->context_at, 8, 8)))
                        return false;
                span_context = word_at(p, 0);
        } else {
                size_t len = h->context_at + 8 - OBJECT_TYPE_AT;
                if (!(p = fetch(w, span + OBJECT_TYPE_AT, len, len)) ||
                    word_at(p, 0) != h->span_type)
                        return false;
                span_context = word_at(p, len - 8);
        }
        if (!(p = fetch(w, span_context, o->tuple_items + 16, o->tuple_items + 16)) ||
            word_at(p, OBJECT_TYPE_AT) != h->span_context_type)
                return false;
        addresses[0] = word_at(p, o->tuple_items);
        addresses[1] = word_at(p, o->tuple_items + 8);
        if (w->copy && w->regions >= 2 && plausible(addresses[0]) && plausible(addresses[1]) &&
            w->copy->interp.n_regions + 2 <= CAPTURE_INTERP_REGIONS &&
            !capture__interp_at(w->capture, addresses[0], LONG_COPY)) {
                size_t lens[2] = {LONG_COPY, LONG_COPY};
                w->regions -= 2;
                (void)capture__copy_interp(w->copy, addresses, lens, 2);
        }
        ints[0] = capture__interp_at(w->capture, addresses[0], LONG_COPY);
        ints[1] = capture__interp_at(w->capture, addresses[1], LONG_COPY);
        if (!ints[0] || !ints[1])
                return false;
        if (publish &&
            (!long_hex_of(o, ints[0], 16, s->trace_id) || !long_hex_of(o, ints[1], 8, s->span_id)))
                s->trace_id[0] = s->span_id[0] = '\0'; /* the invalid span */
        return true;
}

/* The span from the Context head copied at `context`: FOUND or NONE
 * when the walk got to the end, UNKNOWN when it gave up. */
static enum py_task_span_result walk(struct walk *w, struct py_task_span *s, uint64_t context,
                                     bool publish)
{
        const uint8_t *head = capture__interp_at(w->capture, context, PY_TASK_SPAN_CONTEXT_COPY);
        uint64_t value;
        int found;

        if (!s->var || !s->hint.ready || !head ||
            (found = walk_hamt(w, s, word_at(head, CONTEXT_VARS_AT), &value)) < 0)
                return PY_TASK_SPAN_UNKNOWN;
        if (!found)
                return PY_TASK_SPAN_NONE;
        if (!walk_span(w, s, value, publish))
                return PY_TASK_SPAN_UNKNOWN;
        return publish && !s->trace_id[0] ? PY_TASK_SPAN_NONE : PY_TASK_SPAN_FOUND;
}

void py_task_span__capture(struct py_task_span *s, struct capture *capture, uint64_t context)
{
        struct walk w = {capture, capture, PY_TASK_SPAN_WINDOW_REGIONS};

        if (context)
                (void)walk(&w, s, context, false);
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

enum py_task_span_result py_task_span__read(struct py_task_span *s, const struct capture *capture,
                                            uint64_t context, const uint8_t *copy, uint64_t now_ns,
                                            const char **trace_id, const char **span_id)
{
        struct walk w = {NULL, capture, 0};
        enum py_task_span_result result;
        struct found f = {0};
        uint64_t vars, root;

        if (!s->var)
                look_up(s, now_ns);
        if (!s->var)
                return PY_TASK_SPAN_UNKNOWN;
        *trace_id = s->trace_id;
        *span_id = s->span_id;
        if (copy && capture && (result = walk(&w, s, context, true)) != PY_TASK_SPAN_UNKNOWN)
                return result; /* all of it as it was at the stop */
        if (copy)
                memcpy(&vars, copy + CONTEXT_VARS_AT, sizeof(vars));
        else if (!read_word(s->pid, context + CONTEXT_VARS_AT, &vars))
                return PY_TASK_SPAN_UNKNOWN;
        if (!read_word(s->pid, vars + HAMT_ROOT_AT, &root))
                return copy ? PY_TASK_SPAN_STALE : PY_TASK_SPAN_UNKNOWN;
        result = decode(s, root, &f);
        if (copy && !still_held(s, context, copy))
                return PY_TASK_SPAN_STALE;
        /* The window's walk gave up (or was not ready): learn again. */
        if (result == PY_TASK_SPAN_FOUND)
                learn(s, &f);
        return result;
}
