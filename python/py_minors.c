/* py_minors.c — one entry per CPython minor we read: the data behind
 * py_offsets.
 *
 * Why data: nothing in a CPython process says where the thread list or a
 * frame's code object is, except, from 3.13 on, the _Py_DebugOffsets table
 * at the start of _PyRuntime; and even that leaves some fields and every
 * behaviour change unsaid.  CPython keeps these internal layouts stable
 * within a minor version, so one entry per minor suffices, and the readers
 * ask the flags of struct py_offsets, never a version number.
 *
 * How values were measured: offsetof() against the real headers
 * (Py_BUILD_CORE, x86-64, GIL build) of the versions each entry names;
 * _Py_DebugOffsets word indices from that minor's
 * Include/internal/pycore_debug_offsets.h.  The asyncio layouts were
 * measured on the Debian builds the tests run (3.9.2, 3.11.2, 3.13.5,
 * 3.14.8, 3.15.0) with ctypes: TaskObj's name is the word of a task equal
 * to id(task.get_name()); the future state is the byte that reads 0/1/2
 * in a pending/cancelled/finished future; a coroutine's frame and value
 * stack are the words equal to id(coro.cr_code) and id(coro.cr_await),
 * and in 3.9 the words of the frame object pointing into it.  All words read from a target
 * are sanity-checked (py_offsets.c), because the table comes from it.
 *
 * Adding a minor: copy the newest entry; if its pycore_debug_offsets.h
 * moved words, give it its own py_debug_words; check every fixed value
 * and flag against its headers; add its real table's words to
 * tests/unit/test_python_offsets.c and its interpreter to
 * tests/conftest.py. */
#include "python/py_offsets_internal.h"

/* The same in 3.9–3.15: PyUnicodeObject length at 16, state at 32;
 * PyBytesObject ob_size at 16, ob_sval at 32; _PyStackChunk {previous,
 * size, top, data} (3.11+; unused before). */
#define STABLE_OBJECTS                                                                             \
        .unicode_length = 16, .unicode_state = 32, .bytes_size = 16, .bytes_data = 32,             \
        .chunk_size = 8, .chunk_data = 24

/* 3.9: CPython 3.9.18 headers; the GIL holder and what the thread-name
 * reader needs (sys.modules, ht_cached_keys, dict and int layouts) from
 * the Debian 3.9.2 headers.  Heap PyFrameObject chain, f_lasti an int
 * counting bytes, co_lnotab. */
static const struct py_minor minor_39 = {
    .fixed =
        {
            .minor = 9,
            .line_format = PY_LINES_LNOTAB,
            .model = PY_FRAMES_OBJECTS,
            .runtime_interpreters_head = 32,
            .interp_next = 0,
            .interp_threads_head = 8,
            .tstate_size = 264,
            .tstate_next = 8,
            .tstate_interp = 16,
            .tstate_frame = 24,
            .tstate_thread_id = 176,
            .frame_size = 112, /* through f_lasti; the rest is not needed */
            .frame_previous = 24,
            .frame_code = 32,
            .frame_instr = 104,
            .code_size = 176,
            .code_filename = 104,
            .code_name = 112,
            .code_linetable = 120,
            .code_firstlineno = 40,
            STABLE_OBJECTS,
            .unicode_ascii_size = 48, /* PyASCIIObject, with wstr */
            .unicode_compact_size = 72,
            .gil_model = PY_GIL_RUNTIME,
            .gil_holder = 568, /* gilstate.tstate_current */
            .interp_modules = 856,
            .heaptype_cached_keys = 864,
            .dict_model = PY_DICT_SIZED,
            .managed_dict = PY_MANAGED_NONE,
            .tuple_items = 24,
            .asyncio =
                {
                    .task_size = 184,
                    .task_name = 160,
                    .awaiting = {.state = 80,
                                 .waiter = 144,
                                 .frame = 16,
                                 .frame_object = true,
                                 .head = 112,
                                 .stack = 72,
                                 .bottom = 64,
                                 .stack_pointer = true,
                                 .slot = 1},
                },
        },
};

/* 3.10: CPython 3.10.13 headers; the GIL holder and thread-name values
 * from bindgen layouts of the 3.10.0 headers (py-spy's), cross-checked
 * there against the 3.9 and 3.11 ones.  As 3.9 but for a longer
 * PyThreadState, f_lasti counting code units, and co_linetable. */
static const struct py_minor minor_310 = {
    .fixed =
        {
            .minor = 10,
            .line_format = PY_LINES_310,
            .model = PY_FRAMES_OBJECTS,
            .runtime_interpreters_head = 32,
            .interp_next = 0,
            .interp_threads_head = 8,
            .tstate_size = 280,
            .tstate_next = 8,
            .tstate_interp = 16,
            .tstate_frame = 24,
            .tstate_thread_id = 176,
            .frame_size = 112,
            .frame_previous = 24,
            .frame_code = 32,
            .frame_instr = 96,
            .code_size = 176,
            .code_filename = 104,
            .code_name = 112,
            .code_linetable = 120,
            .code_firstlineno = 40,
            STABLE_OBJECTS,
            .unicode_ascii_size = 48,
            .unicode_compact_size = 72,
            .gil_model = PY_GIL_RUNTIME,
            .gil_holder = 568,
            .interp_modules = 856,
            .heaptype_cached_keys = 872,
            .dict_model = PY_DICT_SIZED,
            .managed_dict = PY_MANAGED_NONE,
            .tuple_items = 24,
            .asyncio = {0}, /* not measured: no task names, no task tree */
        },
};

/* 3.11: CPython 3.11.7 headers; GIL holder and thread-name values from
 * the Debian 3.11.2 headers.  _PyInterpreterFrame in the data stack,
 * reached through the tstate's cframe; is_entry marks C-stack entry
 * frames. */
static const struct py_minor minor_311 = {
    .fixed =
        {
            .minor = 11,
            .version_symbol = true,
            .line_format = PY_LINES_LOCATIONS,
            .model = PY_FRAMES_INTERPRETER,
            .runtime_interpreters_head = 40,
            .interp_next = 0,
            .interp_threads_head = 16,
            .tstate_size = 360,
            .tstate_next = 8,
            .tstate_interp = 16,
            .tstate_frame = 56,
            .tstate_root_cframe = 336,
            .cframe_current_frame = 8,
            .cframe_previous = 16,
            .tstate_thread_id = 152,
            .tstate_native_thread_id = 160,
            .tstate_datastack_chunk = 296,
            .frame_size = 80,
            .frame_previous = 48,
            .frame_code = 32,
            .frame_instr = 56,
            .frame_owner = 69,
            .frame_is_entry = 68,
            .code_size = 192,
            .code_filename = 112,
            .code_name = 120,
            .code_qualname = 128,
            .code_linetable = 136,
            .code_firstlineno = 72,
            .code_adaptive = 184,
            .code_firsttraceable = 168,
            STABLE_OBJECTS,
            .unicode_ascii_size = 48,
            .unicode_compact_size = 72,
            .gil_model = PY_GIL_RUNTIME,
            .gil_holder = 576, /* gilstate.tstate_current */
            .interp_modules = 888,
            .heaptype_cached_keys = 872,
            .dict_model = PY_DICT_LOG2,
            .managed_dict = PY_MANAGED_311,
            .tuple_items = 24,
            .asyncio =
                {
                    .task_size = 176,
                    .task_name = 144,
                    .awaiting = {.state = 88,
                                 .waiter = 128,
                                 .frame = 80,
                                 .head = 72,
                                 .stack = 64,
                                 .bottom = 72,
                                 .slot = 1},
                },
        },
};

/* 3.12: CPython 3.12.1 headers; GIL holder and thread-name values from
 * bindgen layouts of the 3.12.0 headers (py-spy's).  The GIL moved into
 * the interpreter (behind a pointer), PyASCIIObject lost wstr, ints carry
 * lv_tag, the managed dict is one tagged word. */
static const struct py_minor minor_312 = {
    .fixed =
        {
            .minor = 12,
            .version_symbol = true,
            .line_format = PY_LINES_LOCATIONS,
            .model = PY_FRAMES_INTERPRETER,
            .runtime_interpreters_head = 40,
            .interp_next = 0,
            .interp_threads_head = 72,
            .tstate_size = 288,
            .tstate_next = 8,
            .tstate_interp = 16,
            .tstate_frame = 56,
            .tstate_root_cframe = 272,
            .cframe_current_frame = 0,
            .cframe_previous = 8,
            .tstate_thread_id = 136,
            .tstate_native_thread_id = 144,
            .tstate_datastack_chunk = 232,
            .frame_size = 80,
            .frame_previous = 8,
            .frame_code = 0,
            .frame_instr = 56,
            .frame_owner = 70,
            .owner_sentinel_min = 3, /* FRAME_OWNED_BY_CSTACK */
            .code_size = 200,
            .code_filename = 112,
            .code_name = 120,
            .code_qualname = 128,
            .code_linetable = 136,
            .code_firstlineno = 68,
            .code_adaptive = 192,
            .code_firsttraceable = 176,
            STABLE_OBJECTS,
            .unicode_ascii_size = 40,
            .unicode_compact_size = 56,
            .gil_model = PY_GIL_INTERP_POINTER,
            .interp_ceval_gil = 384,
            .gil_holder = 8,       /* _gil_runtime_state.last_holder */
            .gil_locked = 16,      /* _gil_runtime_state.locked */
            .interp_modules = 944, /* imports.modules */
            .heaptype_cached_keys = 880,
            .dict_model = PY_DICT_LOG2,
            .managed_dict = PY_MANAGED_312,
            .long_tagged = true,
            .tuple_items = 24,
            .asyncio = {.scheduled_tasks = true}, /* TaskObj not measured */
        },
};

/* 3.13: runtime_state at word 3 (3 words), interpreter_state at 6 (13),
 * thread_state at 19 (9), interpreter_frame at 28 (6), code_object at 34
 * (10), then pyobject 2 (at 44), type_object 4, tuple 3, list 3, dict 3,
 * float 2, long 3: bytes_object at 64 (3), unicode_object at 67.  In
 * interpreter_state, imports_modules is word 11 and gil_runtime_state,
 * _enabled, _locked, _holder are words 15-18.  _enabled is 0 in GIL
 * builds (the field exists only in free-threaded ones, as offset 0 of
 * _gil: so 0 there too). */
static const struct py_debug_words words_313 = {
    .words = 71,
    .interpreters_head = 5,
    .interp_next = 8,
    .interp_threads_head = 9,
    .interp_modules = 11,
    .gil_enabled = 16,
    .gil_locked = 17,
    .gil_holder = 18,
    .tstate_size = 19,
    .tstate_next = 21,
    .tstate_interp = 22,
    .tstate_frame = 23,
    .tstate_thread_id = 24,
    .tstate_native_thread_id = 25,
    .tstate_datastack_chunk = 26,
    .frame_size = 28,
    .frame_previous = 29,
    .frame_executable = 30,
    .frame_instr = 31,
    .frame_owner = 33,
    .code_size = 34,
    .code_filename = 35,
    .code_name = 36,
    .code_qualname = 37,
    .code_linetable = 38,
    .code_firstlineno = 39,
    .code_adaptive = 43,
    .ob_type = 45,
    .tuple_items = 51,
    .bytes_size = 65,
    .bytes_data = 66,
    .unicode_state = 68,
    .unicode_length = 69,
    .unicode_ascii_size = 70,
};

/* 3.13 (Debian 3.13.5): not in its debug offsets, _co_firsttraceable
 * (3.13.0 headers: 184), ht_cached_keys (880) and the compact-unicode
 * header size (PyASCIIObject plus utf8_length and utf8: 56).  instr_ptr is the
 * current instruction; the entry frame runs Py_None.
 *
 * Free-threaded 3.13 (3.13t): the debug offsets are the same table with
 * the free_threaded word set; its values already account for the larger
 * PyObject header (ob_tid, ob_flags, ob_mutex, ob_gc_bits, ob_ref_local,
 * ob_ref_shared before ob_type).  What the table does not carry moves by
 * object_extra, the header's growth, which the table's own
 * pyobject.ob_type gives (24 vs 8) and which must be 16 exactly.  Measured
 * with offsetof() against the Debian 3.13.5 headers configured with
 * --disable-gil: every object field used here (type, dict, int, module,
 * code, heap type) is the GIL build's plus 16; dict keys objects and dict
 * values are unchanged (dk_mutex fits in the padding before dk_version);
 * PyThreadState and _PyInterpreterFrame are the same; MANAGED_DICT_OFFSET
 * is -8. */
static const struct py_minor minor_313 = {
    .fixed =
        {
            .minor = 13,
            .version_symbol = true,
            .line_format = PY_LINES_LOCATIONS,
            .model = PY_FRAMES_INTERPRETER,
            STABLE_OBJECTS,
            .instr_is_current = true,
            .executable_may_be_none = true,
            .owner_sentinel_min = 3, /* FRAME_OWNED_BY_CSTACK */
            .code_firsttraceable = 184,
            .unicode_compact_size = 56, /* PyASCIIObject + utf8_length, utf8 */
            .gil_model = PY_GIL_INTERP,
            .heaptype_cached_keys = 880,
            .dict_model = PY_DICT_LOG2,
            .managed_dict = PY_MANAGED_INLINE,
            .dict_values_header = 8, /* capacity, size, embedded, valid */
            .long_tagged = true,
            .tuple_items = 24,
            .asyncio =
                {
                    .task_size = 144,
                    .task_name = 128,
                    .scheduled_tasks = true,
                    .awaiting = {.state = 96,
                                 .waiter = 112,
                                 .frame = 72,
                                 .head = 72,
                                 .stack = 64,
                                 .bottom = 72,
                                 .slot = 1},
                },
        },
    .debug = &words_313,
    .free_threading = true,
};

/* 3.14: interpreter_state grows to 16 words (threads_main after
 * threads_head; code_object_generation and tlbc_generation at the end),
 * interpreter_frame to 8 (stackpointer, tlbc_index), code_object to 11
 * (co_tlbc), and a 4-word set_object sits between list and dict
 * (imports_modules word 12, the GIL words 16-19, pyobject at 50). */
static const struct py_debug_words words_314 = {
    .words = 81,
    .interpreters_head = 5,
    .interp_next = 8,
    .interp_threads_head = 9,
    .interp_modules = 12,
    .gil_enabled = 17,
    .gil_locked = 18,
    .gil_holder = 19,
    .tstate_size = 22,
    .tstate_next = 24,
    .tstate_interp = 25,
    .tstate_frame = 26,
    .tstate_thread_id = 27,
    .tstate_native_thread_id = 28,
    .tstate_datastack_chunk = 29,
    .frame_size = 31,
    .frame_previous = 32,
    .frame_executable = 33,
    .frame_instr = 34,
    .frame_owner = 36,
    .code_size = 39,
    .code_filename = 40,
    .code_name = 41,
    .code_qualname = 42,
    .code_linetable = 43,
    .code_firstlineno = 44,
    .code_adaptive = 48,
    .ob_type = 51,
    .tuple_items = 57,
    .bytes_size = 75,
    .bytes_data = 76,
    .unicode_state = 78,
    .unicode_length = 79,
    .unicode_ascii_size = 80,
};

/* 3.14 (Debian 3.14.8 headers): ht_cached_keys 880 and the
 * compact-unicode header (56), not published;
 * f_executable is a _PyStackRef; FRAME_OWNED_BY_INTERPRETER = 3; the
 * first traceable instruction is not used (0).  3.14t adds thread-local
 * bytecode copies, deferred stack references and another str state
 * layout, and is refused until it can be tested. */
static const struct py_minor minor_314 = {
    .fixed =
        {
            .minor = 14,
            .version_symbol = true,
            .line_format = PY_LINES_LOCATIONS,
            .model = PY_FRAMES_INTERPRETER,
            STABLE_OBJECTS,
            .instr_is_current = true,
            .tagged_executable = true,
            .owner_sentinel_min = 3, /* FRAME_OWNED_BY_INTERPRETER */
            .unicode_compact_size = 56,
            .gil_model = PY_GIL_INTERP,
            .heaptype_cached_keys = 880,
            .dict_model = PY_DICT_LOG2,
            .managed_dict = PY_MANAGED_INLINE,
            .dict_values_header = 8,
            .long_tagged = true,
            .tuple_items = 32,
            .asyncio =
                {
                    .module_debug = true,
                    .scheduled_tasks = true,
                    .awaiting = {.state = 104,
                                 .waiter = 120,
                                 .frame = 72,
                                 .head = 80,
                                 .stack = 64,
                                 .bottom = 80,
                                 .stack_pointer = true,
                                 .slot = 1},
                },
        },
    .debug = &words_314,
};

/* 3.15 (checked against the Debian 3.15.0-1 pycore_debug_offsets.h):
 * thread_state grows to 16 words (base_frame, last_profiled_frame and
 * last_profiled_frame_seq before thread_id; holds_gil, gil_requested,
 * current_exception, exc_state after status) and moves thread_id;
 * heap_type_object (ht_cached_keys) is published, as is
 * sizeof(PyCompactUnicodeObject).  Word indices from the top of the
 * table: runtime_state 3 (3 words), interpreter_state 6 (16),
 * thread_state 22 (16), err_stackitem 38 (1), interpreter_frame 39 (8),
 * code_object 47 (11), pyobject 58 (2), type_object 60 (6),
 * heap_type_object 66 (2), tuple 68 (3), list 71 (3), set 74 (4), dict 78
 * (3), float 81 (2), long 83 (3), bytes_object 86 (3), unicode_object 89
 * (5). */
static const struct py_debug_words words_315 = {
    .words = 94, /* through unicode_object */
    .interpreters_head = 5,
    .interp_next = 8,
    .interp_threads_head = 9,
    .interp_modules = 12,
    .gil_enabled = 17,
    .gil_locked = 18,
    .gil_holder = 19,
    .tstate_size = 22,
    .tstate_next = 24,
    .tstate_interp = 25,
    .tstate_frame = 26,
    .tstate_thread_id = 30,
    .tstate_native_thread_id = 31,
    .tstate_datastack_chunk = 32,
    .frame_size = 39,
    .frame_previous = 40,
    .frame_executable = 41,
    .frame_instr = 42,
    .frame_owner = 44,
    .code_size = 47,
    .code_filename = 48,
    .code_name = 49,
    .code_qualname = 50,
    .code_linetable = 51,
    .code_firstlineno = 52,
    .code_adaptive = 56,
    .ob_type = 59,
    .heaptype_cached_keys = 67,
    .tuple_items = 69,
    .bytes_size = 87,
    .bytes_data = 88,
    .unicode_state = 90,
    .unicode_length = 91,
    .unicode_ascii_size = 92,
    .unicode_compact_size = 93,
};

/* 3.15: what its debug offsets leave out holds as in 3.14, checked
 * against the Debian 3.15.0-1 headers: _PyStackChunk {previous, size, top,
 * data} (cpython/pystate.h), FRAME_OWNED_BY_INTERPRETER = 3
 * (pycore_interpframe_structs.h), the 2-bit _PyStackRef tag
 * (pycore_stackref.h), MANAGED_DICT_OFFSET -24 and inline values at
 * tp_basicsize (pycore_object.h), the 4-byte PyDictValues header (values
 * at 8) and
 * dk_log2_size/dk_log2_index_bytes/dk_kind (pycore_dict.h), lv_tag with 3
 * non-size bits (cpython/longintrepr.h), the unicode state bits
 * (cpython/unicodeobject.h) and md_dict right after PyObject_HEAD
 * (pycore_moduleobject.h).  As in 3.14 the first traceable instruction is
 * not used (0).  3.15t is refused until it can be tested. */
static const struct py_minor minor_315 = {
    .fixed =
        {
            .minor = 15,
            .version_symbol = true,
            .line_format = PY_LINES_LOCATIONS,
            .model = PY_FRAMES_INTERPRETER,
            STABLE_OBJECTS,
            .instr_is_current = true,
            .tagged_executable = true,
            .owner_sentinel_min = 3, /* FRAME_OWNED_BY_INTERPRETER */
            .gil_model = PY_GIL_INTERP,
            .dict_model = PY_DICT_LOG2,
            .managed_dict = PY_MANAGED_INLINE,
            .dict_values_header = 8,
            .long_tagged = true,
            .tuple_items = 32,
            .asyncio =
                {
                    .module_debug = true,
                    .scheduled_tasks = true,
                    .awaiting = {.state = 104,
                                 .waiter = 120,
                                 .frame = 72,
                                 .head = 80,
                                 .stack = 64,
                                 .bottom = 80,
                                 .stack_pointer = true,
                                 .slot = 2}, /* one more item above the awaited */
                },
        },
    .debug = &words_315,
};

static const struct py_minor *const minors[] = {
    &minor_39, &minor_310, &minor_311, &minor_312, &minor_313, &minor_314, &minor_315,
};

const struct py_minor *py_minors__at(size_t i)
{
        return i < sizeof(minors) / sizeof(minors[0]) ? minors[i] : NULL;
}
