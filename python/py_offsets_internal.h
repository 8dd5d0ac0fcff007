/* py_offsets_internal.h — the per-minor table behind py_offsets.
 *
 * One const struct py_minor per CPython minor we read (python/py_minors.c):
 * what its runtime does not publish, as fixed values, and which words of
 * its _Py_DebugOffsets carry the rest.  py_offsets.c turns an entry (and,
 * from 3.13 on, the target's table) into the flat struct py_offsets the
 * readers use.  Supporting a new minor is one entry there plus its test. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "python/py_offsets.h"

/* Word indices into a _Py_DebugOffsets table (word 0 is the cookie, 1 the
 * version, 2 free_threaded), one per py_offsets field it fills; 0: this
 * layout does not publish it (the entry's fixed value stays). */
struct py_debug_words {
        unsigned int words; /* words through the last one used */
        unsigned int interpreters_head;
        unsigned int interp_next, interp_threads_head, interp_modules;
        unsigned int gil_enabled, gil_locked, gil_holder;
        unsigned int tstate_size, tstate_next, tstate_interp, tstate_frame;
        unsigned int tstate_thread_id, tstate_native_thread_id, tstate_datastack_chunk;
        unsigned int frame_size, frame_previous, frame_executable, frame_instr, frame_owner;
        unsigned int code_size, code_filename, code_name, code_qualname, code_linetable;
        unsigned int code_firstlineno, code_adaptive;
        unsigned int ob_type; /* pyobject.ob_type: 8, or 24 free-threaded */
        unsigned int heaptype_cached_keys;
        unsigned int tuple_items; /* tuple_object.ob_item */
        unsigned int bytes_size, bytes_data;
        unsigned int unicode_state, unicode_length, unicode_ascii_size, unicode_compact_size;
};

struct py_minor {
        /* Everything for a GIL build, or (with `debug`) what the runtime
         * does not publish; fixed.minor is the minor. */
        struct py_offsets fixed;
        /* NULL before 3.13: `fixed` is the whole layout.  Otherwise the
         * published words overwrite `fixed`, and its object-relative values
         * that stay (ht_cached_keys, _co_firsttraceable, the compact-unicode
         * header size) move by the free-threaded header's growth
         * (object_extra). */
        const struct py_debug_words *debug;
        bool free_threading; /* its free-threaded build is read */
};

/* The i-th entry, oldest minor first; NULL past the last. */
const struct py_minor *py_minors__at(size_t i);
