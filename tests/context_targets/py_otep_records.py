"""In-process check of the Python package's OTEP 4947 records
(tests/test_python_otep.py), read back through the dynamic linker:
dlsym("otel_thread_ctx_v1") gives the calling thread's variable, as any
reader's TLS lookup would find it.  Prints "ok" or raises."""

import ctypes
import threading

import splunk_profd_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

splunk_profd_context.install(segment=False)
assert splunk_profd_context.thread_records_published()
assert splunk_profd_context.segment() is None
trace.set_tracer_provider(TracerProvider())
tracer = trace.get_tracer("py_otep_records")
lib = ctypes.CDLL(splunk_profd_context._state.native.path)


def current():
    """(trace_id, span_id, trace_flags) the calling thread's record says, or None."""
    pointer = ctypes.c_void_p.in_dll(lib, "otel_thread_ctx_v1").value
    if not pointer:
        return None
    assert pointer % 2 == 0, "the OTEP wants a 2-byte aligned record"
    record = ctypes.string_at(pointer, 28)
    assert record[24] == 1, record.hex()  # valid
    assert record[26:28] == b"\0\0", record.hex()  # no attributes
    return int.from_bytes(record[:16], "big"), int.from_bytes(record[16:24], "big"), record[25]


def expect(span):
    sc = span.get_span_context()
    got = current()
    assert got == (sc.trace_id, sc.span_id, int(sc.trace_flags)), (got, sc)


def spans(name, entered, release):
    assert current() is None
    with tracer.start_as_current_span(f"outer-{name}") as outer:
        expect(outer)
        with tracer.start_as_current_span(f"inner-{name}") as inner:
            expect(inner)
        expect(outer)  # detach restores the parent's span
        entered.set()
        release.wait()
        expect(outer)  # another thread's spans never touched this one's record
    assert current() is None  # detach to no span clears it


entered, release = threading.Event(), threading.Event()
other = threading.Thread(target=spans, args=("a", entered, release))
other.start()
entered.wait()
done, go = threading.Event(), threading.Event()
go.set()
spans("main", done, go)
release.set()
other.join()

# uninstall() clears every live thread's record, not only its own.
held, stop = threading.Event(), threading.Event()
seen = []


def holder():
    with tracer.start_as_current_span("held"):
        held.set()
        stop.wait()
        seen.append(current())


thread = threading.Thread(target=holder)
thread.start()
held.wait()
splunk_profd_context.uninstall()
stop.set()
thread.join()
assert seen == [None], seen
print("ok")
