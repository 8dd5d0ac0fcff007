"""Publishes each thread's current OpenTelemetry span to splunk-profd.

install() wraps the attach/detach of opentelemetry-api's runtime context
(the functions behind opentelemetry.context.attach/detach, so callers that
imported those names early are covered too).  After attach, the calling
thread's OTEP 4947 record (otel_thread_ctx_v1, _thread_record.py) and its
slot in our own segment (see _segment.py) hold the span of the attached
context; after detach, the span of the restored context, or none.

Both are written: the OTEP record is what any standard reader (and
splunk-profd first) reads; the segment carries what the standard has no
field for (the internal-thread flag) and serves older splunk-profd
versions.  install(segment=False), or SPLUNK_PROFD_CONTEXT_SEGMENT=0 in the
environment, leaves the segment out.  Without the native part (installed
without a C compiler) only the segment is written.

Fork: os.register_at_fork gives the child a fresh segment (its header
names the child as owner) and drops the inherited mapping; the forking
thread's current span is re-published there and in its OTEP record (which
the child inherited with the thread's TLS).

Process context: install() also publishes the OpenTelemetry process
context (OTEP 4719, _process_context.py) with the SDK's resource, so
service.name and the rest reach any standard reader (splunk-profd puts
them in its export resource); publish_process_context() re-publishes it
after the application configured its own resource.  With thread records,
its attributes carry threadlocal.schema_version and an empty
threadlocal.attribute_key_map, as the C library's.

Internal threads: the SDK's worker threads (batch span/log processors, the
periodic metric reader) are marked, both those already running at
install() and those started later (threading.Thread.run is wrapped).
"""

from __future__ import annotations

import contextvars
import os
import threading
import weakref
from typing import Any, Callable, Mapping, Optional

from ._process_context import ProcessContext, resource_attributes
from ._segment import DEFAULT_SLOTS, FLAG_INTERNAL, Segment, SlotWriter
from . import _thread_record
from ._thread_record import RECORD, Native, ThreadRecord

_pack_span = RECORD.pack

__all__ = ["install", "uninstall", "installed", "mark_current_thread_internal", "segment",
           "publish_process_context", "thread_records_published"]

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


class _ThreadWriter:
    """The calling thread's publications: its OTEP record and/or its slot.
    Lives in _state.local, so it goes with the thread (or with a new
    install, uninstall or fork, which replace _state.local)."""

    __slots__ = ("record", "slot", "trace_id", "span_id", "trace_bytes", "__weakref__")

    def __init__(self, record: Optional[ThreadRecord], slot: Optional[_ThreadSlot]) -> None:
        self.record, self.slot = record, slot
        self.trace_id = self.span_id = 0
        self.trace_bytes = bytes(16)

    def write(self, trace_id: int, span_id: int, trace_flags: int) -> None:
        """Hot path: packs the span once, for both the record and the slot."""
        if trace_id != self.trace_id:
            self.trace_bytes = trace_id.to_bytes(16, "big")
        data = _pack_span(self.trace_bytes, span_id, 1 if span_id else 0, trace_flags)
        record = self.record
        if record is not None:
            if span_id:
                record.publish(data)
            else:
                record.clear()
        slot = self.slot
        if slot is not None:
            slot.write_packed(data)
        self.trace_id, self.span_id = trace_id, span_id


class _State:
    def __init__(self) -> None:
        self.segment: Optional[Segment] = None
        self.native: Optional[Native] = None
        self.native_loaded = False  # load() tried (it warns once when there is none)
        self.writers: "weakref.WeakSet[_ThreadWriter]" = weakref.WeakSet()  # to clear at uninstall
        self.writers_lock = threading.Lock()
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


def thread_records_published() -> bool:
    """Whether OTEP 4947 thread records are published (installed, with the
    native part)."""
    return _state.original is not None and _state.native is not None


def publish_process_context(resource: Optional[Mapping[str, Any]] = None) -> bool:
    """Publishes the OTEP 4719 process context with `resource` (default:
    the SDK's resource, see _process_context.resource_attributes).  Returns
    whether it was published; never raises."""
    try:
        if _state.process_context is None:
            _state.process_context = ProcessContext()
        if _state.original is not None and _state.native is not None:
            _state.process_context.thread_schema = _thread_record.SCHEMA_VERSION
        _state.resource = dict(resource) if resource is not None else resource_attributes()
        _state.process_context.publish(_state.resource)
        return True
    except Exception:
        return False


def installed() -> bool:
    return _state.original is not None


def _thread_writer(flags: int = 0) -> Optional[_ThreadWriter]:
    """The calling thread's writer, made on its first use; None when it
    has nothing to write to (not installed, or no record and no slot)."""
    writer = getattr(_state.local, "writer", None)
    if writer is not None:
        return writer
    if _state.original is None:
        return None
    slot = None
    seg = _state.segment
    if seg is not None:
        tid = threading.get_native_id()
        index = seg.claim(tid, flags)
        if index >= 0:
            slot = _ThreadSlot(seg, index, tid)
    record = _state.native.thread_record() if _state.native is not None else None
    if slot is None and record is None:
        return None
    writer = _ThreadWriter(record, slot)
    with _state.writers_lock:
        _state.writers.add(writer)
    _state.local.writer = writer
    return writer


def _publish_span(span: Any) -> None:
    """Hot path (every attach/detach): the calling thread's record and slot := span."""
    if span is None:
        trace_id = span_id = flags = 0
    else:
        trace_id, span_id, flags = _state.span_ids(span.get_span_context())
        if not (trace_id and span_id):
            trace_id = span_id = 0
    writer = getattr(_state.local, "writer", None)
    if writer is None:
        if not span_id:
            return  # nothing published yet, nothing to clear
        writer = _thread_writer()
        if writer is None:
            return
    elif writer.span_id == span_id and writer.trace_id == trace_id:
        return
    writer.write(trace_id, span_id, flags)


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
    """Marks the calling thread as telemetry-internal (see module doc).
    Only our segment has the flag: without it, this does nothing."""
    writer = _thread_writer()
    if writer is not None and writer.slot is not None:
        writer.slot.segment.set_flags(writer.slot.index, FLAG_INTERNAL if internal else 0)


def _is_internal(thread: threading.Thread) -> bool:
    target = getattr(thread, "_target", None)
    module = getattr(target, "__module__", None) or ""
    return thread.name.startswith(_INTERNAL_NAME_PREFIXES) or module.startswith(_INTERNAL_MODULE_PREFIXES)


def _mark_running_threads() -> None:
    seg = _state.segment
    if seg is None:
        return
    for thread in threading.enumerate():
        if thread.native_id and _is_internal(thread):
            if thread is threading.current_thread():
                _thread_writer(FLAG_INTERNAL)
            else:
                seg.claim(thread.native_id, FLAG_INTERNAL)  # the thread's own writer finds it


def _wrap_run(run: Callable) -> Callable:
    def run_marked(self: threading.Thread) -> None:
        if _state.segment is not None and _is_internal(self):
            mark_current_thread_internal()
        return run(self)

    return run_marked


def _after_fork_in_child() -> None:
    if _state.process_context is not None and _state.resource is not None:
        publish_process_context(_state.resource)  # MADV_DONTFORK: the child has none
    if _state.original is None:
        return
    old = _state.segment
    if old is not None:
        _state.segment = Segment(old.slots)
        try:
            old.close()  # unmaps the inherited mapping in the child only
        except Exception:
            pass
    _state.local = threading.local()  # the parent's threads are gone
    _state.writers = weakref.WeakSet()
    _state.writers_lock = threading.Lock()
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


def _segment_wanted(segment: Optional[bool]) -> bool:
    if segment is not None:
        return segment
    return os.environ.get("SPLUNK_PROFD_CONTEXT_SEGMENT", "").strip() != "0"


def install(slots: int = DEFAULT_SLOTS, segment: Optional[bool] = None) -> None:
    """Starts publishing spans: OTEP 4947 thread records (when the native
    part is there) and our own segment (unless segment is False, or, when
    it is None, SPLUNK_PROFD_CONTEXT_SEGMENT=0).  Idempotent."""
    if _state.original is not None:
        return
    from opentelemetry import context as context_api
    from opentelemetry.trace.propagation import _SPAN_KEY

    _state.span_key = _SPAN_KEY
    _state.span_ids = _span_ids_fast if _tuple_layout_ok() else _span_ids
    if not _state.native_loaded:
        _state.native = _thread_record.load()
        _state.native_loaded = True
    _state.local = threading.local()
    _state.segment = Segment(slots) if _segment_wanted(segment) else None
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
    """Stops publishing: clears every thread's OTEP record and unmaps the
    segment."""
    if _state.original is None:
        return
    for name in ("attach", "detach"):
        try:
            delattr(_state.runtime, name)
        except AttributeError:
            pass
    threading.Thread.run = _state.original_run  # type: ignore[method-assign]
    _state.original = None
    # After the wrappers are gone, so that no thread publishes again (bar
    # one that was inside a wrapper just now).
    with _state.writers_lock:
        writers = list(_state.writers)
    for writer in writers:  # threads that are gone took their writers with them
        if writer.record is not None:
            writer.record.clear()
    seg, _state.segment = _state.segment, None
    if seg is not None:
        seg.close()
    _state.local = threading.local()
