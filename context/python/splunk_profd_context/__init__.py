"""Publishes each thread's current OpenTelemetry span to splunk-profd.

install() wraps the attach/detach of opentelemetry-api's runtime context
(the functions behind opentelemetry.context.attach/detach, so callers that
imported those names early are covered too).  After attach, the calling
thread's slot in the segment (see _segment.py) holds the span of the
attached context; after detach, the span of the restored context, or none.

Fork: os.register_at_fork gives the child a fresh segment (its header
names the child as owner) and drops the inherited mapping; the forking
thread's current span is re-published there.

Process context: install() also publishes the OpenTelemetry process
context (OTEP 4719, _process_context.py) with the SDK's resource, so
service.name and the rest reach any standard reader (splunk-profd puts
them in its export resource); publish_process_context() re-publishes it
after the application configured its own resource.  The per-thread OTEP
4947 record is not published: it needs an ELF TLS symbol, which pure
Python cannot define.

Internal threads: the SDK's worker threads (batch span/log processors, the
periodic metric reader) are marked, both those already running at
install() and those started later (threading.Thread.run is wrapped).
"""

from __future__ import annotations

import contextvars
import os
import threading
from typing import Any, Callable, Mapping, Optional

from ._process_context import ProcessContext, resource_attributes
from ._segment import DEFAULT_SLOTS, FLAG_INTERNAL, Segment, SlotWriter

__all__ = ["install", "uninstall", "installed", "mark_current_thread_internal", "segment",
           "publish_process_context"]

_INTERNAL_NAME_PREFIXES = ("OtelBatch", "OtelPeriodicExportingMetricReader", "OtelBatchSpanProcessor")
_INTERNAL_MODULE_PREFIXES = ("opentelemetry.sdk", "opentelemetry.exporter")


def _span_ids(sc: Any) -> tuple:
    return sc.trace_id, sc.span_id, sc.trace_flags


def _span_ids_fast(sc: Any) -> tuple:
    # SpanContext is a tuple (trace_id, span_id, is_remote, trace_flags, ...);
    # unpacking it beats three property calls.  Checked in install().
    return sc[0], sc[1], sc[3]


class _ThreadSlot(SlotWriter):
    """One thread's slot; released when the thread's locals go away (thread exit)."""

    __slots__ = ("tid", "__weakref__")

    def __init__(self, segment: Segment, index: int, tid: int) -> None:
        super().__init__(segment, index)
        self.tid = tid

    def __del__(self) -> None:
        try:
            if self.segment is _state.segment:
                self.segment.release(self.index, self.tid)
        except Exception:  # interpreter shutdown
            pass


class _State:
    def __init__(self) -> None:
        self.segment: Optional[Segment] = None
        self.local = threading.local()
        self.runtime: Any = None
        self.original: Optional[tuple] = None
        self.original_run: Optional[Callable] = None
        self.span_key: Any = None
        self.fork_hook = False
        self.span_ids: Callable = _span_ids
        self.process_context: Optional[ProcessContext] = None
        self.resource: Optional[Mapping[str, Any]] = None  # as last published


_state = _State()


def segment() -> Optional[Segment]:
    """The current segment (None before install())."""
    return _state.segment


def publish_process_context(resource: Optional[Mapping[str, Any]] = None) -> bool:
    """Publishes the OTEP 4719 process context with `resource` (default:
    the SDK's resource, see _process_context.resource_attributes).  Returns
    whether it was published; never raises."""
    try:
        if _state.process_context is None:
            _state.process_context = ProcessContext()
        _state.resource = dict(resource) if resource is not None else resource_attributes()
        _state.process_context.publish(_state.resource)
        return True
    except Exception:
        return False


def installed() -> bool:
    return _state.original is not None


def _thread_slot() -> Optional[_ThreadSlot]:
    slot = getattr(_state.local, "slot", None)
    if slot is not None and slot.segment is _state.segment:
        return slot
    seg = _state.segment
    if seg is None:
        return None
    tid = threading.get_native_id()
    index = seg.claim(tid)
    if index < 0:
        return None
    slot = _ThreadSlot(seg, index, tid)
    _state.local.slot = slot
    return slot


def _publish_span(span: Any) -> None:
    """Hot path (every attach/detach): the calling thread's slot := span."""
    if span is None:
        trace_id = span_id = flags = 0
    else:
        trace_id, span_id, flags = _state.span_ids(span.get_span_context())
        if not (trace_id and span_id):
            trace_id = span_id = 0
    slot = getattr(_state.local, "slot", None)
    if slot is None or slot.segment is not _state.segment:
        if not span_id:
            return  # nothing published yet, nothing to clear
        slot = _thread_slot()
        if slot is None:
            return
    elif slot.span_id == span_id and slot.trace_id == trace_id:
        return
    slot.write(trace_id, span_id, flags)


def _publish(context: Any) -> None:
    _publish_span(context.get(_state.span_key) if context is not None else None)


def _wrap_attach(attach: Callable) -> Callable:
    key = _state.span_key

    def attach_and_publish(context: Any) -> Any:
        token = attach(context)
        try:
            _publish_span(context.get(key))
        except Exception:
            pass
        return token

    return attach_and_publish


def _wrap_detach(detach: Callable) -> Callable:
    key = _state.span_key
    missing = contextvars.Token.MISSING

    def detach_and_publish(token: Any) -> None:
        detach(token)
        try:
            # The restored context is the token's old value (a contextvars.Token).
            old = token.old_value
            _publish_span(None if old is missing else old.get(key))
        except Exception:
            pass

    return detach_and_publish


def mark_current_thread_internal(internal: bool = True) -> None:
    """Marks the calling thread as telemetry-internal (see module doc)."""
    slot = _thread_slot()
    if slot is not None:
        slot.segment.set_flags(slot.index, FLAG_INTERNAL if internal else 0)


def _is_internal(thread: threading.Thread) -> bool:
    target = getattr(thread, "_target", None)
    module = getattr(target, "__module__", None) or ""
    return thread.name.startswith(_INTERNAL_NAME_PREFIXES) or module.startswith(_INTERNAL_MODULE_PREFIXES)


def _mark_running_threads() -> None:
    seg = _state.segment
    for thread in threading.enumerate():
        if thread.native_id and _is_internal(thread):
            index = seg.claim(thread.native_id, FLAG_INTERNAL)
            if index >= 0 and thread is threading.current_thread():
                _state.local.slot = _ThreadSlot(seg, index, thread.native_id)


def _wrap_run(run: Callable) -> Callable:
    def run_marked(self: threading.Thread) -> None:
        if _state.segment is not None and _is_internal(self):
            mark_current_thread_internal()
        return run(self)

    return run_marked


def _after_fork_in_child() -> None:
    if _state.process_context is not None and _state.resource is not None:
        publish_process_context(_state.resource)  # MADV_DONTFORK: the child has none
    old = _state.segment
    if old is None:
        return
    _state.segment = Segment(old.slots)
    _state.local = threading.local()  # the parent's threads are gone
    try:
        old.close()  # unmaps the inherited mapping in the child only
    except Exception:
        pass
    from opentelemetry import context as context_api

    current = threading.current_thread()
    if _is_internal(current):
        mark_current_thread_internal()
    _publish(context_api.get_current())


def _tuple_layout_ok() -> bool:
    from opentelemetry.trace import SpanContext, TraceFlags

    sc = SpanContext(trace_id=3, span_id=5, is_remote=False, trace_flags=TraceFlags(1))
    try:
        return _span_ids_fast(sc) == _span_ids(sc) == (3, 5, 1)
    except Exception:
        return False


def install(slots: int = DEFAULT_SLOTS) -> None:
    """Creates the segment and starts publishing spans.  Idempotent."""
    if _state.original is not None:
        return
    from opentelemetry import context as context_api
    from opentelemetry.trace.propagation import _SPAN_KEY

    _state.span_key = _SPAN_KEY
    _state.span_ids = _span_ids_fast if _tuple_layout_ok() else _span_ids
    _state.segment = Segment(slots)
    runtime = getattr(context_api, "_RUNTIME_CONTEXT", None)
    _state.runtime = runtime
    _state.original = (runtime.attach, runtime.detach)
    # Instance attributes shadow the class methods; uninstall() removes them.
    runtime.attach = _wrap_attach(runtime.attach)
    runtime.detach = _wrap_detach(runtime.detach)
    _state.original_run = threading.Thread.run
    threading.Thread.run = _wrap_run(threading.Thread.run)  # type: ignore[method-assign]
    if not _state.fork_hook:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _state.fork_hook = True
    _mark_running_threads()
    _publish(context_api.get_current())
    publish_process_context()


def uninstall() -> None:
    """Stops publishing and clears the segment (it stays mapped, empty)."""
    if _state.original is None:
        return
    for name in ("attach", "detach"):
        try:
            delattr(_state.runtime, name)
        except AttributeError:
            pass
    threading.Thread.run = _state.original_run  # type: ignore[method-assign]
    _state.original = None
    seg, _state.segment = _state.segment, None
    if seg is not None:
        seg.close()
    _state.local = threading.local()
