/* py_offsets.c — CPython's internal layout, per minor version.
 *
 * Why this exists: nothing in a CPython process says where the thread
 * list or a frame's code object is, except, from 3.13 on, the
 * _Py_DebugOffsets table at the start of _PyRuntime.  For 3.9–3.12 the
 * offsets are built in.  They were measured with offsetof() against the
 * real headers (Py_BUILD_CORE, x86-64, GIL build) of CPython 3.9.18,
 * 3.10.13, 3.11.7 and 3.12.1; CPython keeps these internal layouts stable
 * within a minor version, which is why one table per minor suffices.
 *
 * How the debug offsets are read: the table is a flat sequence of uint64
 * values whose order changed between 3.13 and 3.14 (3.14 inserted fields
 * in the middle of several sub-tables), so each layout is described here
 * by word index and chosen by the version word of the table itself.  All
 * values are sanity-checked, because the table comes from the target.
 *
 * The GIL holder and what the thread-name reader needs (sys.modules,
 * ht_cached_keys, dict and int layouts) were measured the same way, with
 * offsetof() on the Debian 3.9.2, 3.11.2, 3.13.5 and 3.14.8 headers; the
 * 3.10 and 3.12 values come from bindgen layouts of the 3.10.0 and 3.12.0
 * headers (py-spy's), cross-checked there against the values above.
 *
 * Fields the debug offsets do not carry are fixed per version:
 * _co_firsttraceable (3.13.0 headers: 184) and, before 3.15, the
 * compact-unicode header size (PyASCIIObject plus utf8_length and utf8)
 * and ht_cached_keys.  3.15 publishes those two, and the fixed values
 * below hold for it too, checked against the Debian 3.15.0-1 headers:
 * _PyStackChunk {previous, size, top, data} (cpython/pystate.h),
 * FRAME_OWNED_BY_INTERPRETER = 3 (pycore_interpframe_structs.h), the
 * 2-bit _PyStackRef tag (pycore_stackref.h), MANAGED_DICT_OFFSET -24 and
 * inline values at tp_basicsize (pycore_object.h), the 4-byte
 * PyDictValues header and dk_log2_size/dk_log2_index_bytes/dk_kind
 * (pycore_dict.h), lv_tag with 3 non-size bits (cpython/longintrepr.h),
 * the unicode state bits (cpython/unicodeobject.h) and md_dict right
 * after PyObject_HEAD (pycore_moduleobject.h).  As in 3.14 the first
 * traceable instruction is not used (0).
 *
 * Free-threaded 3.13 (3.13t): the debug offsets are the same table with the
 * free_threaded word set; its values already account for the larger
 * PyObject header.  What the table does not carry moves by object_extra,
 * the header's growth, which the table's own pyobject.ob_type gives (24 vs
 * 8) and which must be 16 exactly.  Measured with offsetof() against the
 * Debian 3.13.5 headers configured with --disable-gil: every object field
 * used here (type, dict, int, module, code, heap type) is the GIL build's
 * plus 16; dict keys objects and dict values are unchanged (dk_mutex fits
 * in the padding before dk_version); PyThreadState and
 * _PyInterpreterFrame are the same; MANAGED_DICT_OFFSET is -8.  3.14t adds
 * thread-local bytecode copies, deferred stack references and another
 * str state layout, and is refused until it can be tested; so is 3.15t. */
#include "python/py_offsets.h"

#include <string.h>

#define MAX_STRUCT_SIZE (64u * 1024)

static void common_objects(struct py_offsets *o, uint64_t ascii_size, uint64_t compact_size)
{
        o->unicode_length = 16;
        o->unicode_state = 32;
        o->unicode_ascii_size = ascii_size;
        o->unicode_compact_size = compact_size;
        o->bytes_size = 16;
        o->bytes_data = 32;
}

static void table_39_310(unsigned int minor, struct py_offsets *o)
{
        o->model = PY_FRAMES_OBJECTS;
        o->runtime_interpreters_head = 32;
        o->interp_next = 0;
        o->interp_threads_head = 8;
        o->tstate_size = minor == 9 ? 264 : 280;
        o->tstate_next = 8;
        o->tstate_interp = 16;
        o->tstate_frame = 24;
        o->tstate_thread_id = 176;
        o->frame_size = 112; /* through f_lasti; the rest is not needed */
        o->frame_previous = 24;
        o->frame_code = 32;
        o->frame_instr = minor == 9 ? 104 : 96;
        o->code_size = 176;
        o->code_filename = 104;
        o->code_name = 112;
        o->code_linetable = 120;
        o->code_firstlineno = 40;
        common_objects(o, 48, 72);
        o->gil_model = PY_GIL_RUNTIME;
        o->gil_holder = 568; /* gilstate.tstate_current */
        o->interp_modules = 856;
        o->heaptype_cached_keys = minor == 9 ? 864 : 872;
        o->dict_model = PY_DICT_SIZED;
        o->managed_dict = PY_MANAGED_NONE;
}

static void table_311(struct py_offsets *o)
{
        o->model = PY_FRAMES_INTERPRETER;
        o->runtime_interpreters_head = 40;
        o->interp_next = 0;
        o->interp_threads_head = 16;
        o->tstate_size = 360;
        o->tstate_next = 8;
        o->tstate_interp = 16;
        o->tstate_frame = 56;
        o->tstate_root_cframe = 336;
        o->cframe_current_frame = 8;
        o->cframe_previous = 16;
        o->tstate_thread_id = 152;
        o->tstate_native_thread_id = 160;
        o->tstate_datastack_chunk = 296;
        o->frame_size = 80;
        o->frame_previous = 48;
        o->frame_code = 32;
        o->frame_instr = 56;
        o->frame_owner = 69;
        o->frame_is_entry = 68;
        o->code_size = 192;
        o->code_filename = 112;
        o->code_name = 120;
        o->code_qualname = 128;
        o->code_linetable = 136;
        o->code_firstlineno = 72;
        o->code_adaptive = 184;
        o->code_firsttraceable = 168;
        common_objects(o, 48, 72);
        o->gil_model = PY_GIL_RUNTIME;
        o->gil_holder = 576; /* gilstate.tstate_current */
        o->interp_modules = 888;
        o->heaptype_cached_keys = 872;
        o->dict_model = PY_DICT_LOG2;
        o->managed_dict = PY_MANAGED_311;
}

static void table_312(struct py_offsets *o)
{
        o->model = PY_FRAMES_INTERPRETER;
        o->runtime_interpreters_head = 40;
        o->interp_next = 0;
        o->interp_threads_head = 72;
        o->tstate_size = 288;
        o->tstate_next = 8;
        o->tstate_interp = 16;
        o->tstate_frame = 56;
        o->tstate_root_cframe = 272;
        o->cframe_current_frame = 0;
        o->cframe_previous = 8;
        o->tstate_thread_id = 136;
        o->tstate_native_thread_id = 144;
        o->tstate_datastack_chunk = 232;
        o->frame_size = 80;
        o->frame_previous = 8;
        o->frame_code = 0;
        o->frame_instr = 56;
        o->frame_owner = 70;
        o->owner_sentinel_min = 3; /* FRAME_OWNED_BY_CSTACK */
        o->code_size = 200;
        o->code_filename = 112;
        o->code_name = 120;
        o->code_qualname = 128;
        o->code_linetable = 136;
        o->code_firstlineno = 68;
        o->code_adaptive = 192;
        o->code_firsttraceable = 176;
        common_objects(o, 40, 56);
        o->gil_model = PY_GIL_INTERP_POINTER;
        o->interp_ceval_gil = 384;
        o->gil_holder = 8;       /* _gil_runtime_state.last_holder */
        o->gil_locked = 16;      /* _gil_runtime_state.locked */
        o->interp_modules = 944; /* imports.modules */
        o->heaptype_cached_keys = 880;
        o->dict_model = PY_DICT_LOG2;
        o->managed_dict = PY_MANAGED_312;
        o->long_tagged = true;
}

bool py_offsets__for_minor(unsigned int minor, struct py_offsets *out)
{
        memset(out, 0, sizeof(*out));
        out->minor = minor;
        out->chunk_size = 8;
        out->chunk_data = 24;
        switch (minor) {
        case 9:
        case 10:
                table_39_310(minor, out);
                return true;
        case 11:
                table_311(out);
                return true;
        case 12:
                table_312(out);
                return true;
        default:
                return false;
        }
}

/* Word indices into _Py_DebugOffsets (after the 8-byte cookie, word 1 is
 * the version, word 2 free_threaded).  Only the words we use. */
struct debug_layout {
        unsigned int interpreters_head;
        unsigned int interp_next, interp_threads_head, interp_modules;
        unsigned int gil_enabled, gil_locked, gil_holder;
        unsigned int tstate; /* first word of the thread_state table (its size) */
        unsigned int frame;  /* first word of interpreter_frame */
        unsigned int code;   /* first word of code_object */
        unsigned int bytes;  /* first word of bytes_object */
        unsigned int unicode;
        unsigned int ob_type; /* pyobject.ob_type */
};

/* 3.13: runtime_state at word 3 (3 words), interpreter_state at 6 (13),
 * thread_state at 19 (9), interpreter_frame at 28 (6), code_object at 34
 * (10), then pyobject 2 (at 44), type_object 4, tuple 3, list 3, dict 3,
 * float 2, long 3: bytes_object at 64 (3), unicode_object at 67.  In
 * interpreter_state, imports_modules is word 11 and gil_runtime_state,
 * _enabled, _locked, _holder are words 15-18. */
static const struct debug_layout layout_313 = {
    .interpreters_head = 5,
    .interp_next = 8,
    .interp_threads_head = 9,
    .interp_modules = 11,
    .gil_enabled = 16,
    .gil_locked = 17,
    .gil_holder = 18,
    .tstate = 19,
    .frame = 28,
    .code = 34,
    .bytes = 64,
    .unicode = 67,
    .ob_type = 45,
};

/* 3.14: interpreter_state grows to 16 words (threads_main after
 * threads_head; code_object_generation and tlbc_generation at the end),
 * interpreter_frame to 8 (stackpointer, tlbc_index), code_object to 11
 * (co_tlbc), and a 4-word set_object sits between list and dict
 * (imports_modules word 12, the GIL words 16-19, pyobject at 50). */
static const struct debug_layout layout_314 = {
    .interpreters_head = 5,
    .interp_next = 8,
    .interp_threads_head = 9,
    .interp_modules = 12,
    .gil_enabled = 17,
    .gil_locked = 18,
    .gil_holder = 19,
    .tstate = 22,
    .frame = 31,
    .code = 39,
    .bytes = 74,
    .unicode = 77,
    .ob_type = 51,
};

/* 3.15 (checked against the Debian 3.15.0-1 pycore_debug_offsets.h):
 * thread_state grows to 16 words (base_frame, last_profiled_frame and
 * last_profiled_frame_seq before thread_id; holds_gil, gil_requested,
 * current_exception, exc_state after status) and moves thread_id, so it
 * gets its own word list; heap_type_object (ht_cached_keys) is published,
 * as is sizeof(PyCompactUnicodeObject).  Word indices from the top of the
 * table: runtime_state 3 (3 words), interpreter_state 6 (16),
 * thread_state 22 (16), err_stackitem 38 (1), interpreter_frame 39 (8),
 * code_object 47 (11), pyobject 58 (2), type_object 60 (6),
 * heap_type_object 66 (2), tuple 68 (3), list 71 (3), set 74 (4), dict 78
 * (3), float 81 (2), long 83 (3), bytes_object 86 (3), unicode_object 89
 * (5). */
enum debug_word_315 {
        W315_INTERPRETERS_HEAD = 5,
        W315_INTERP_NEXT = 8,
        W315_INTERP_THREADS_HEAD = 9,
        W315_INTERP_MODULES = 12,
        W315_GIL_ENABLED = 17,
        W315_GIL_LOCKED = 18,
        W315_GIL_HOLDER = 19,
        W315_TSTATE_SIZE = 22,
        W315_TSTATE_NEXT = 24,
        W315_TSTATE_INTERP = 25,
        W315_TSTATE_CURRENT_FRAME = 26,
        W315_TSTATE_THREAD_ID = 30,
        W315_TSTATE_NATIVE_THREAD_ID = 31,
        W315_TSTATE_DATASTACK_CHUNK = 32,
        W315_FRAME_SIZE = 39,
        W315_FRAME_PREVIOUS = 40,
        W315_FRAME_EXECUTABLE = 41,
        W315_FRAME_INSTR_PTR = 42,
        W315_FRAME_OWNER = 44,
        W315_CODE_SIZE = 47,
        W315_CODE_FILENAME = 48,
        W315_CODE_NAME = 49,
        W315_CODE_QUALNAME = 50,
        W315_CODE_LINETABLE = 51,
        W315_CODE_FIRSTLINENO = 52,
        W315_CODE_ADAPTIVE = 56,
        W315_HEAPTYPE_CACHED_KEYS = 67,
        W315_BYTES_OB_SIZE = 87,
        W315_BYTES_OB_SVAL = 88,
        W315_UNICODE_STATE = 90,
        W315_UNICODE_LENGTH = 91,
        W315_UNICODE_ASCII_SIZE = 92,
        W315_UNICODE_COMPACT_SIZE = 93,
        W315_WORDS = 94, /* through unicode_object */
};

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

static void apply_layout(const uint8_t *d, const struct debug_layout *l, struct py_offsets *o)
{
        o->model = PY_FRAMES_INTERPRETER;
        o->runtime_interpreters_head = word(d, l->interpreters_head);
        o->interp_next = word(d, l->interp_next);
        o->interp_threads_head = word(d, l->interp_threads_head);
        o->tstate_size = word(d, l->tstate);
        o->tstate_next = word(d, l->tstate + 2);
        o->tstate_interp = word(d, l->tstate + 3);
        o->tstate_frame = word(d, l->tstate + 4);
        o->tstate_thread_id = word(d, l->tstate + 5);
        o->tstate_native_thread_id = word(d, l->tstate + 6);
        o->tstate_datastack_chunk = word(d, l->tstate + 7);
        o->frame_size = word(d, l->frame);
        o->frame_previous = word(d, l->frame + 1);
        o->frame_code = word(d, l->frame + 2);
        o->frame_instr = word(d, l->frame + 3);
        o->frame_owner = word(d, l->frame + 5);
        o->code_size = word(d, l->code);
        o->code_filename = word(d, l->code + 1);
        o->code_name = word(d, l->code + 2);
        o->code_qualname = word(d, l->code + 3);
        o->code_linetable = word(d, l->code + 4);
        o->code_firstlineno = word(d, l->code + 5);
        o->code_adaptive = word(d, l->code + 9);
        o->bytes_size = word(d, l->bytes + 1);
        o->bytes_data = word(d, l->bytes + 2);
        o->unicode_state = word(d, l->unicode + 1);
        o->unicode_length = word(d, l->unicode + 2);
        o->unicode_ascii_size = word(d, l->unicode + 3);
        /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8. */
        o->unicode_compact_size = o->unicode_ascii_size + 16;
        o->interp_modules = word(d, l->interp_modules);
        o->free_threaded = word(d, 2) != 0;
        o->object_extra = word(d, l->ob_type) - 8;
        /* _enabled is 0 in GIL builds (the field exists only in
         * free-threaded ones, as offset 0 of _gil: so 0 there too).  A
         * free-threaded build has a _gil, used only when the GIL is
         * switched back on at run time (PYTHON_GIL=1, or an extension
         * module that needs it); its holder is not read, see README. */
        o->gil_model =
            o->free_threaded || word(d, l->gil_enabled) != 0 ? PY_GIL_NONE : PY_GIL_INTERP;
        o->gil_holder = word(d, l->gil_holder);
        o->gil_locked = word(d, l->gil_locked);
}

static void apply_315(const uint8_t *d, struct py_offsets *o)
{
        o->model = PY_FRAMES_INTERPRETER;
        o->runtime_interpreters_head = word(d, W315_INTERPRETERS_HEAD);
        o->interp_next = word(d, W315_INTERP_NEXT);
        o->interp_threads_head = word(d, W315_INTERP_THREADS_HEAD);
        o->tstate_size = word(d, W315_TSTATE_SIZE);
        o->tstate_next = word(d, W315_TSTATE_NEXT);
        o->tstate_interp = word(d, W315_TSTATE_INTERP);
        o->tstate_frame = word(d, W315_TSTATE_CURRENT_FRAME);
        o->tstate_thread_id = word(d, W315_TSTATE_THREAD_ID);
        o->tstate_native_thread_id = word(d, W315_TSTATE_NATIVE_THREAD_ID);
        o->tstate_datastack_chunk = word(d, W315_TSTATE_DATASTACK_CHUNK);
        o->frame_size = word(d, W315_FRAME_SIZE);
        o->frame_previous = word(d, W315_FRAME_PREVIOUS);
        o->frame_code = word(d, W315_FRAME_EXECUTABLE);
        o->frame_instr = word(d, W315_FRAME_INSTR_PTR);
        o->frame_owner = word(d, W315_FRAME_OWNER);
        o->code_size = word(d, W315_CODE_SIZE);
        o->code_filename = word(d, W315_CODE_FILENAME);
        o->code_name = word(d, W315_CODE_NAME);
        o->code_qualname = word(d, W315_CODE_QUALNAME);
        o->code_linetable = word(d, W315_CODE_LINETABLE);
        o->code_firstlineno = word(d, W315_CODE_FIRSTLINENO);
        o->code_adaptive = word(d, W315_CODE_ADAPTIVE);
        o->heaptype_cached_keys = word(d, W315_HEAPTYPE_CACHED_KEYS);
        o->bytes_size = word(d, W315_BYTES_OB_SIZE);
        o->bytes_data = word(d, W315_BYTES_OB_SVAL);
        o->unicode_state = word(d, W315_UNICODE_STATE);
        o->unicode_length = word(d, W315_UNICODE_LENGTH);
        o->unicode_ascii_size = word(d, W315_UNICODE_ASCII_SIZE);
        o->unicode_compact_size = word(d, W315_UNICODE_COMPACT_SIZE);
        o->interp_modules = word(d, W315_INTERP_MODULES);
        o->gil_model = word(d, W315_GIL_ENABLED) == 0 ? PY_GIL_INTERP : PY_GIL_NONE;
        o->gil_holder = word(d, W315_GIL_HOLDER);
        o->gil_locked = word(d, W315_GIL_LOCKED);
}

/* What 3.15 publishes beyond the 3.14 checks (plausible()): the cached
 * keys inside a heap type (PyHeapTypeObject is about 900 bytes) and a
 * compact-unicode header a little above the ASCII one (two words in the
 * headers, allowed up to four). */
static bool plausible_315(const struct py_offsets *o)
{
        return o->heaptype_cached_keys >= 400 && o->heaptype_cached_keys < 4096 &&
               (o->heaptype_cached_keys & 7) == 0 &&
               o->unicode_compact_size > o->unicode_ascii_size &&
               o->unicode_compact_size <= o->unicode_ascii_size + 32;
}

bool py_offsets__from_debug(const uint8_t *data, size_t len, struct py_offsets *out,
                            uint32_t *version, const char **why)
{
        const struct debug_layout *layout;
        unsigned int minor;

        memset(out, 0, sizeof(*out));
        if (len < 8u * (layout_314.unicode + 4) || memcmp(data, PY_DEBUG_COOKIE, 8) != 0) {
                *why = "no _Py_DebugOffsets cookie";
                return false;
        }
        *version = (uint32_t)word(data, 1);
        minor = (*version >> 16) & 0xff;
        if ((*version >> 24) != 3 || minor < 13 || minor > 15) {
                *why = "unsupported CPython minor version";
                return false;
        }
        if (word(data, 2) != 0 && minor != 13) {
                *why = "free-threaded builds of this CPython minor are not supported";
                return false;
        }
        if (minor == 15 && len < 8u * W315_WORDS) {
                *why = "_Py_DebugOffsets cut short";
                return false;
        }
        out->minor = minor;
        if (minor == 15) {
                apply_315(data, out);
        } else {
                layout = minor == 13 ? &layout_313 : &layout_314;
                apply_layout(data, layout, out);
                /* not in their debug offsets */
                out->heaptype_cached_keys = 880 + out->object_extra;
        }
        out->chunk_size = 8;
        out->chunk_data = 24;
        out->instr_is_current = true;
        out->owner_sentinel_min = 3; /* CSTACK (3.13), INTERPRETER (3.14, 3.15) */
        out->executable_may_be_none = minor == 13;
        out->tagged_executable = minor >= 14;
        out->code_firsttraceable = minor == 13 ? 184 + out->object_extra : 0;
        out->dict_model = PY_DICT_LOG2;
        out->managed_dict = PY_MANAGED_INLINE;
        out->dict_values_header = 8; /* capacity, size, embedded, valid */
        out->long_tagged = true;
        /* The only two PyObject headers there are (see py_offsets.h). */
        if (!plausible(out) || (minor == 15 && !plausible_315(out)) ||
            out->object_extra != (out->free_threaded ? 16u : 0u)) {
                *why = "implausible _Py_DebugOffsets values";
                return false;
        }
        if (out->code_firsttraceable + 4 > out->code_size)
                out->code_firsttraceable = 0;
        return true;
}
