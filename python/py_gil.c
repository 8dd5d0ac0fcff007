/* py_gil.c — the thread.gil label: did this thread hold the GIL when it
 * was sampled?
 *
 * Why: a Python thread that runs on a CPU without the GIL is waiting for
 * it or running C code that released it; with the GIL it runs Python.
 * `go tool pprof -tagfocus=thread.gil=true` shows what holds the others up.
 *
 * How: the holder is a word or two in the target, read together with the
 * thread state in the thread's own stop-window process_vm_readv (one more
 * range in the same call, no extra syscall), so for a stopped thread the
 * answer is exact: a stopped thread cannot take or drop the GIL.
 *   <=3.11  _PyRuntime.gilstate.tstate_current: the holder's thread state,
 *           NULL while nobody holds it.
 *   3.12    interp->ceval.gil points to a _gil_runtime_state; last_holder
 *           counts only while `locked` is set (it stays after a release).
 *           The pointer is read when the thread list is refreshed.
 *   3.13+   the interpreter's own _gil, at offsets from _Py_DebugOffsets
 *           (gil_runtime_state_holder / _locked), same rule.
 * The region spans the holder and the lock word (PY_GIL_REGION_MAX). */
#include "python/py_gil.h"

#include <string.h>

#include "attach/remote_memory.h"

static uint64_t region_start(const struct py_offsets *o)
{
        if (o->gil_locked && o->gil_locked < o->gil_holder)
                return o->gil_locked;
        return o->gil_holder;
}

size_t py_gil__region_len(const struct py_offsets *o)
{
        uint64_t start = region_start(o), end = o->gil_holder + 8;

        if (o->gil_model == PY_GIL_NONE)
                return 0;
        if (o->gil_locked && o->gil_locked + 4 > end)
                end = o->gil_locked + 4;
        return end - start <= PY_GIL_REGION_MAX ? (size_t)(end - start) : 0;
}

static uint64_t gil_base(pid_t pid, const struct py_runtime *runtime, uint64_t interp)
{
        const struct py_offsets *o = runtime->offsets;
        uint64_t gil = 0;

        switch (o->gil_model) {
        case PY_GIL_RUNTIME:
                return runtime->runtime_address;
        case PY_GIL_INTERP_POINTER:
                if (remote_memory__read(pid, interp + o->interp_ceval_gil, &gil, sizeof(gil)) !=
                        sizeof(gil) ||
                    gil < 4096 || (gil & 7))
                        return 0;
                return gil;
        case PY_GIL_INTERP:
                return interp;
        case PY_GIL_NONE:
                break;
        }
        return 0;
}

uint64_t py_gil__region(pid_t pid, const struct py_runtime *runtime, uint64_t interp)
{
        uint64_t base;

        if (py_gil__region_len(runtime->offsets) == 0 || interp < 4096)
                return 0;
        base = gil_base(pid, runtime, interp);
        return base ? base + region_start(runtime->offsets) : 0;
}

enum py_gil_state py_gil__holder_is(const struct py_offsets *o, const uint8_t *region, size_t len,
                                    uint64_t tstate)
{
        uint64_t start = region_start(o), holder;
        int32_t locked = 1;

        if (!region || len < py_gil__region_len(o) || py_gil__region_len(o) == 0 || !tstate)
                return PY_GIL_UNKNOWN;
        memcpy(&holder, region + (o->gil_holder - start), sizeof(holder));
        if (o->gil_locked)
                memcpy(&locked, region + (o->gil_locked - start), sizeof(locked));
        return locked != 0 && holder == tstate ? PY_GIL_HELD : PY_GIL_NOT_HELD;
}
