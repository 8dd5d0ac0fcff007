/* py_offsets.c — CPython's internal layout for one process, from its
 * minor's entry (python/py_minors.c) and, from 3.13 on, the target's own
 * _Py_DebugOffsets.
 *
 * How the debug offsets are read: the table is a flat sequence of uint64
 * values whose order changes between minors (3.14 inserted fields in the
 * middle of several sub-tables, 3.15 grew the thread state), so each
 * entry says by word index where each field is, and the entry is chosen
 * by the version word of the table itself.  The words overwrite the
 * entry's fixed values; all are sanity-checked, because the table comes
 * from the target. */
#include "python/py_offsets.h"

#include <stdio.h>
#include <string.h>

#include "python/py_offsets_internal.h"

#define MAX_STRUCT_SIZE (64u * 1024)
#define HEADER_WORDS    3 /* cookie, version, free_threaded */

static const struct py_minor *find_minor(unsigned int minor)
{
        const struct py_minor *m;

        for (size_t i = 0; (m = py_minors__at(i)); i++)
                if (m->fixed.minor == minor)
                        return m;
        return NULL;
}

bool py_offsets__for_minor(unsigned int minor, struct py_offsets *out)
{
        const struct py_minor *m = find_minor(minor);

        memset(out, 0, sizeof(*out));
        if (!m || m->debug)
                return false;
        *out = m->fixed;
        return true;
}

static uint64_t word(const uint8_t *data, unsigned int index)
{
        uint64_t value;

        memcpy(&value, data + 8u * index, sizeof(value));
        return value;
}

/* Every offset must fall inside its struct, and structs must be sane. */
static bool plausible(const struct py_offsets *o)
{
        const uint64_t in_tstate[] = {
            o->tstate_next,      o->tstate_interp,           o->tstate_frame,
            o->tstate_thread_id, o->tstate_native_thread_id, o->tstate_datastack_chunk};
        const uint64_t in_frame[] = {o->frame_previous, o->frame_code, o->frame_instr,
                                     o->frame_owner};
        const uint64_t in_code[] = {o->code_filename,  o->code_name,        o->code_qualname,
                                    o->code_linetable, o->code_firstlineno, o->code_adaptive};

        if (o->tstate_size < 64 || o->tstate_size > 4096 || o->frame_size < 32 ||
            o->frame_size > 512 || o->code_size < 64 || o->code_size > 1024)
                return false;
        for (size_t i = 0; i < sizeof(in_tstate) / sizeof(in_tstate[0]); i++)
                if (in_tstate[i] + 8 > o->tstate_size)
                        return false;
        for (size_t i = 0; i < sizeof(in_frame) / sizeof(in_frame[0]); i++)
                if (in_frame[i] + 1 > o->frame_size)
                        return false;
        for (size_t i = 0; i < sizeof(in_code) / sizeof(in_code[0]); i++)
                if (in_code[i] > o->code_size)
                        return false;
        return o->unicode_ascii_size >= 32 && o->unicode_ascii_size <= 128 &&
               o->unicode_state < o->unicode_ascii_size && o->bytes_data < 128 &&
               o->runtime_interpreters_head < MAX_STRUCT_SIZE &&
               o->interp_threads_head < MAX_STRUCT_SIZE && o->interp_next < MAX_STRUCT_SIZE &&
               o->interp_modules < MAX_STRUCT_SIZE && o->gil_holder < MAX_STRUCT_SIZE &&
               o->gil_locked < MAX_STRUCT_SIZE;
}

/* What only some minors publish (3.15 on): the cached keys inside a heap
 * type (PyHeapTypeObject is about 900 bytes) and a compact-unicode header
 * a little above the ASCII one (two words in the headers, allowed up to
 * four). */
static bool plausible_published(const struct py_offsets *o, const struct py_debug_words *w)
{
        if (w->heaptype_cached_keys &&
            (o->heaptype_cached_keys < 400 || o->heaptype_cached_keys >= 4096 ||
             (o->heaptype_cached_keys & 7) != 0))
                return false;
        return !w->unicode_compact_size || (o->unicode_compact_size > o->unicode_ascii_size &&
                                            o->unicode_compact_size <= o->unicode_ascii_size + 32);
}

/* Which py_offsets field each py_debug_words index fills. */
#define PUBLISHED(words_field, offsets_field)                                                      \
        {                                                                                          \
                offsetof(struct py_debug_words, words_field),                                      \
                    offsetof(struct py_offsets, offsets_field)                                     \
        }

static const struct {
        size_t word, field;
} published[] = {
    PUBLISHED(interpreters_head, runtime_interpreters_head),
    PUBLISHED(interp_next, interp_next),
    PUBLISHED(interp_threads_head, interp_threads_head),
    PUBLISHED(interp_modules, interp_modules),
    PUBLISHED(gil_locked, gil_locked),
    PUBLISHED(gil_holder, gil_holder),
    PUBLISHED(tstate_size, tstate_size),
    PUBLISHED(tstate_next, tstate_next),
    PUBLISHED(tstate_interp, tstate_interp),
    PUBLISHED(tstate_frame, tstate_frame),
    PUBLISHED(tstate_thread_id, tstate_thread_id),
    PUBLISHED(tstate_native_thread_id, tstate_native_thread_id),
    PUBLISHED(tstate_datastack_chunk, tstate_datastack_chunk),
    PUBLISHED(frame_size, frame_size),
    PUBLISHED(frame_previous, frame_previous),
    PUBLISHED(frame_executable, frame_code),
    PUBLISHED(frame_instr, frame_instr),
    PUBLISHED(frame_owner, frame_owner),
    PUBLISHED(code_size, code_size),
    PUBLISHED(code_filename, code_filename),
    PUBLISHED(code_name, code_name),
    PUBLISHED(code_qualname, code_qualname),
    PUBLISHED(code_linetable, code_linetable),
    PUBLISHED(code_firstlineno, code_firstlineno),
    PUBLISHED(code_adaptive, code_adaptive),
    PUBLISHED(heaptype_cached_keys, heaptype_cached_keys),
    PUBLISHED(tuple_items, tuple_items),
    PUBLISHED(bytes_size, bytes_size),
    PUBLISHED(bytes_data, bytes_data),
    PUBLISHED(unicode_state, unicode_state),
    PUBLISHED(unicode_length, unicode_length),
    PUBLISHED(unicode_ascii_size, unicode_ascii_size),
    PUBLISHED(unicode_compact_size, unicode_compact_size),
};

static unsigned int index_of(const struct py_debug_words *w, size_t at)
{
        unsigned int index;

        memcpy(&index, (const uint8_t *)w + at, sizeof(index));
        return index;
}

/* The entry's fixed values, overwritten by what the table publishes. */
static void apply_words(const uint8_t *d, const struct py_minor *m, struct py_offsets *o)
{
        const struct py_debug_words *w = m->debug;

        *o = m->fixed;
        for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++) {
                unsigned int index = index_of(w, published[i].word);
                uint64_t value;
                if (!index)
                        continue;
                value = word(d, index);
                memcpy((uint8_t *)o + published[i].field, &value, sizeof(value));
        }
        o->free_threaded = word(d, 2) != 0;
        o->object_extra = w->ob_type ? word(d, w->ob_type) - 8 : 0;
        /* A free-threaded build has a _gil, used only when the GIL is
         * switched back on at run time (PYTHON_GIL=1, or an extension
         * module that needs it); its holder is not read, see README. */
        if (o->free_threaded || (w->gil_enabled && word(d, w->gil_enabled) != 0))
                o->gil_model = PY_GIL_NONE;
        if (!w->heaptype_cached_keys)
                o->heaptype_cached_keys += o->object_extra;
        if (!w->unicode_compact_size)
                o->unicode_compact_size += o->object_extra;
        if (o->code_firsttraceable)
                o->code_firsttraceable += o->object_extra;
}

/* "3.16.0", "3.16.0a1", "3.16.0rc2", or "3.16" without a release level. */
static void version_text(uint32_t v, char *text, size_t size)
{
        unsigned int major = v >> 24, minor = (v >> 16) & 0xff, micro = (v >> 8) & 0xff;
        unsigned int level = (v >> 4) & 0xf, serial = v & 0xf;
        const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : NULL;

        if (level == 0)
                snprintf(text, size, "%u.%u", major, minor);
        else if (tag)
                snprintf(text, size, "%u.%u.%u%s%u", major, minor, micro, tag, serial);
        else
                snprintf(text, size, "%u.%u.%u", major, minor, micro);
}

void py_offsets__why_unsupported(uint32_t version, const char *what, char *why, size_t why_size)
{
        const struct py_minor *m, *oldest = py_minors__at(0), *newest = oldest;
        char text[32], threaded[64] = "";
        size_t used = 0;

        for (size_t i = 0; (m = py_minors__at(i)); i++) {
                newest = m;
                if (m->free_threading && used < sizeof(threaded))
                        used += (size_t)snprintf(threaded + used, sizeof(threaded) - used, "%s3.%u",
                                                 used ? ", " : "", m->fixed.minor);
        }
        version_text(version, text, sizeof(text));
        snprintf(why, why_size, "CPython %s: %s (splunk-profd reads 3.%u to 3.%u%s%s)", text, what,
                 oldest->fixed.minor, newest->fixed.minor, used ? "; free-threaded: " : "",
                 threaded);
}

static bool refuse(uint32_t version, const char *what, char *why, size_t why_size)
{
        py_offsets__why_unsupported(version, what, why, why_size);
        return false;
}

bool py_offsets__from_debug(const uint8_t *data, size_t len, struct py_offsets *out,
                            uint32_t *version, char *why, size_t why_size)
{
        const struct py_minor *m;

        memset(out, 0, sizeof(*out));
        *version = 0;
        if (len < 8u * HEADER_WORDS || memcmp(data, PY_DEBUG_COOKIE, 8) != 0) {
                snprintf(why, why_size, "no _Py_DebugOffsets cookie");
                return false;
        }
        *version = (uint32_t)word(data, 1);
        m = (*version >> 24) == 3 ? find_minor((*version >> 16) & 0xff) : NULL;
        if (!m || !m->debug)
                return refuse(*version, "no layout for this minor version", why, why_size);
        if (word(data, 2) != 0 && !m->free_threading)
                return refuse(*version, "free-threaded builds of this minor are not read", why,
                              why_size);
        if (len < 8u * m->debug->words)
                return refuse(*version, "_Py_DebugOffsets cut short", why, why_size);
        apply_words(data, m, out);
        /* The only two PyObject headers there are (see py_offsets.h). */
        if (!plausible(out) || !plausible_published(out, m->debug) ||
            out->object_extra != (out->free_threaded ? 16u : 0u))
                return refuse(*version, "implausible _Py_DebugOffsets values", why, why_size);
        if (out->code_firsttraceable + 4 > out->code_size)
                out->code_firsttraceable = 0;
        return true;
}
