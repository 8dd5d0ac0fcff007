/* py_offsets.h — where CPython keeps what we read, for one minor version.
 *
 * Everything the reader needs about CPython's internal layout is in one
 * flat struct of byte offsets and behaviour flags, filled from the
 * minor's entry in python/py_minors.c: whole for 3.9–3.12, and from 3.13
 * on completed by the _Py_DebugOffsets CPython embeds at the start of
 * _PyRuntime.  The rest of python/ never tests a version number, only the
 * flags below. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a frame is represented and how its instruction position reads. */
enum py_frame_model {
        PY_FRAMES_OBJECTS,     /* 3.9/3.10: heap PyFrameObject, f_back, int f_lasti */
        PY_FRAMES_INTERPRETER, /* 3.11+: _PyInterpreterFrame in the data stack */
};

/* How a code object maps instruction positions to lines (python/py_line.c). */
enum py_line_format {
        PY_LINES_LNOTAB,    /* 3.9: co_lnotab; f_lasti counts bytes */
        PY_LINES_310,       /* 3.10: co_linetable; f_lasti counts code units */
        PY_LINES_LOCATIONS, /* 3.11+: the location table; code-unit index */
};

/* Where the GIL says who holds it (see python/py_gil.c). */
enum py_gil_model {
        PY_GIL_NONE,
        PY_GIL_RUNTIME,        /* <=3.11: _PyRuntime.gilstate.tstate_current, NULL when free */
        PY_GIL_INTERP_POINTER, /* 3.12: interp->ceval.gil -> {last_holder, locked} */
        PY_GIL_INTERP,         /* 3.13+: interp->_gil {last_holder, locked}, by debug offsets */
};

/* Dict keys objects (python/py_dict.c). */
enum py_dict_model {
        PY_DICT_SIZED, /* 3.9/3.10: dk_size, dk_nentries, 24-byte entries */
        PY_DICT_LOG2,  /* 3.11+: dk_log2_size, dk_log2_index_bytes, dk_kind */
};

/* Where an instance keeps its attributes when its type manages them. */
enum py_managed_dict {
        PY_MANAGED_NONE,   /* 3.9/3.10: only tp_dictoffset */
        PY_MANAGED_311,    /* values pointer at -32, dict pointer at -24 */
        PY_MANAGED_312,    /* one word at -24: dict, or values - 1 (odd) */
        PY_MANAGED_INLINE, /* 3.13+: dict at -24, else values after tp_basicsize */
};

/* How a suspended coroutine's frame shows what it awaits
 * (python/py_asyncio_tasks.c): measured on x86-64 GIL builds.  All zero
 * (state 0): not measured for this minor, no task tree. */
struct py_await_layout {
        uint64_t state;     /* FutureObj.fut_state (int) */
        uint64_t waiter;    /* TaskObj.task_fut_waiter */
        uint64_t frame;     /* in a coroutine: its frame (3.11+), or a pointer to it */
        bool frame_object;  /* 3.9: `frame` holds a pointer to a PyFrameObject */
        uint64_t head;      /* frame bytes read: up to localsplus, or past f_lasti */
        uint64_t stack;     /* in the frame: stacktop (int) or a pointer past the top */
        uint64_t bottom;    /* in the frame: localsplus, or (3.9) f_valuestack's word */
        bool stack_pointer; /* `stack` is a pointer (3.9, 3.14+) */
        unsigned int slot;  /* the awaited object is slot-th from the top */
};

/* Where _asyncio keeps its tasks (python/py_asyncio*.c). */
struct py_asyncio_layout {
        /* TaskObj, measured (ctypes: the word of a task equal to
         * id(task.get_name())); 0: not measured (then no task names
         * unless module_debug). */
        uint64_t task_size, task_name;
        /* 3.14+: the _asyncio module publishes its own layout
         * (_Py_AsyncioModuleDebugOffsets), tasks lists included */
        bool module_debug;
        /* 3.12+: asyncio.tasks keeps _scheduled_tasks and _eager_tasks,
         * before it _all_tasks */
        bool scheduled_tasks;
        struct py_await_layout awaiting;
};

struct py_offsets {
        unsigned int minor;
        enum py_frame_model model;
        /* _PyRuntimeState, PyInterpreterState */
        uint64_t runtime_interpreters_head;
        uint64_t interp_next;
        uint64_t interp_threads_head;
        /* PyThreadState */
        uint64_t tstate_size; /* bytes copied per tstate */
        uint64_t tstate_next;
        uint64_t tstate_interp;
        uint64_t tstate_frame;            /* 3.9/10 frame; 3.11/12 cframe; 3.13+ current_frame */
        uint64_t tstate_root_cframe;      /* 3.11/12: the cframe embedded in the tstate */
        uint64_t cframe_current_frame;    /* 3.11/12 */
        uint64_t cframe_previous;         /* 3.11/12 */
        uint64_t tstate_thread_id;        /* pthread_t == threading.get_ident() */
        uint64_t tstate_native_thread_id; /* 0: not available (3.9/10) */
        uint64_t tstate_datastack_chunk;  /* 0: no data stack (3.9/10) */
        /* _PyStackChunk */
        uint64_t chunk_size;
        uint64_t chunk_data;
        /* frame (PyFrameObject or _PyInterpreterFrame) */
        uint64_t frame_size; /* bytes read per frame */
        uint64_t frame_previous;
        uint64_t frame_code;
        uint64_t frame_instr;        /* f_lasti (int) or prev_instr/instr_ptr (pointer) */
        uint64_t frame_owner;        /* 3.11+ (one byte) */
        uint64_t frame_is_entry;     /* 3.11 only (one byte); 0 otherwise */
        bool instr_is_current;       /* 3.13+: instr_ptr is the current instruction */
        bool tagged_executable;      /* 3.14+: f_executable is a _PyStackRef */
        bool executable_may_be_none; /* 3.13: the entry frame runs Py_None */
        uint8_t owner_sentinel_min;  /* 3.12+: owner >= this is a shim/sentinel; 0 = none */
        /* PyCodeObject */
        uint64_t code_size; /* bytes read per code object */
        uint64_t code_filename;
        uint64_t code_name;
        uint64_t code_qualname;  /* 0 before 3.11 */
        uint64_t code_linetable; /* co_lnotab (3.9) or co_linetable */
        uint64_t code_firstlineno;
        uint64_t code_adaptive;       /* 3.11+: co_code_adaptive */
        uint64_t code_firsttraceable; /* 3.11–3.13; 0 when unknown */
        enum py_line_format line_format;
        bool version_symbol; /* 3.11+: the binary exports Py_Version */
        /* str and bytes */
        uint64_t unicode_length;
        uint64_t unicode_state;
        uint64_t unicode_ascii_size;   /* data of a compact ASCII string */
        uint64_t unicode_compact_size; /* data of other compact strings */
        uint64_t bytes_size;
        uint64_t bytes_data;
        /* GIL holder: offsets from the GIL's base, which is _PyRuntime
         * (PY_GIL_RUNTIME), *(interp + interp_ceval_gil) (3.12) or the
         * interpreter (3.13+).  gil_locked 0: no lock word. */
        enum py_gil_model gil_model;
        uint64_t interp_ceval_gil;
        uint64_t gil_holder;
        uint64_t gil_locked;
        /* Python thread names: sys.modules, dicts, instance attributes */
        uint64_t interp_modules;
        uint64_t heaptype_cached_keys; /* PyHeapTypeObject.ht_cached_keys */
        enum py_dict_model dict_model;
        enum py_managed_dict managed_dict;
        uint64_t dict_values_header; /* bytes before PyDictValues.values */
        bool long_tagged;            /* 3.12+: PyLongObject.lv_tag, not ob_size */
        uint64_t tuple_items;        /* PyTupleObject.ob_item (3.14+: after ob_hash) */
        struct py_asyncio_layout asyncio;
        /* Free-threaded builds (--disable-gil, 3.13t): PyObject carries
         * ob_tid, ob_flags, ob_mutex, ob_gc_bits, ob_ref_local and
         * ob_ref_shared before ob_type, 16 bytes more than a GIL build's
         * ob_refcnt, so every field of every object moves by object_extra
         * (0 or 16).  Objects have no PyGC_Head before them, so the managed
         * dict pointer is the word just before the object.  There is no
         * GIL to label (gil_model PY_GIL_NONE). */
        bool free_threaded;
        uint64_t object_extra;
};

#define PY_DEBUG_COOKIE      "xdebugpy"
#define PY_DEBUG_OFFSETS_MAX 1024 /* bytes of _PyRuntime read to parse them */

/* Built-in table for 3.9–3.12.  Returns false for any other minor. */
bool py_offsets__for_minor(unsigned int minor, struct py_offsets *out);

/* Parses the _Py_DebugOffsets copied from the start of _PyRuntime (3.13,
 * 3.14 and 3.15 layouts, and 3.13 free-threaded).  `version` is its
 * PY_VERSION_HEX.  Returns false, with one line in `why` that names the
 * version (py_offsets__why_unsupported), for a bad cookie, a minor without
 * an entry, a free-threaded build of a minor whose entry does not read
 * it, or implausible values. */
bool py_offsets__from_debug(const uint8_t *data, size_t len, struct py_offsets *out,
                            uint32_t *version, char *why, size_t why_size);

/* One line: "CPython 3.16.0: <what> (splunk-profd reads ...)", naming
 * `version` (a PY_VERSION_HEX; with only major and minor set, as when
 * the minor comes from a file name, just "3.16") and the minors that
 * have an entry. */
void py_offsets__why_unsupported(uint32_t version, const char *what, char *why, size_t why_size);
