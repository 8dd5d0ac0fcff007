"""Two threads run nested spans (real opentelemetry-api/-sdk) around busy
work in known functions: outer_work_X inside span outer-X (before and after
the inner span), inner_work_X inside inner-X, free_work_X outside spans.
Prints {"X": {"tid": ..., "outer_work_X": [trace, span], ...}} then "ready".

With "internal": also a BatchSpanProcessor whose exporter burns CPU in
exporter_burn (the SDK's worker thread: internal), and its tid.
With "noinstall": the writer is expected to come from opentelemetry-instrument."""

import sys
import threading

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from otel_common import LeadingZeroIds, burn, ids, say

mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode != "noinstall":
    import splunk_profd_context

    splunk_profd_context.install()


class BurningExporter(SpanExporter):
    def export(self, spans):
        exporter_burn()
        return SpanExportResult.SUCCESS


def exporter_burn():
    burn(0.05)


if mode == "noinstall":
    provider = trace.get_tracer_provider()
    provider.id_generator = LeadingZeroIds()
else:
    provider = TracerProvider(id_generator=LeadingZeroIds())
    trace.set_tracer_provider(provider)
if mode == "internal":
    provider.add_span_processor(BatchSpanProcessor(BurningExporter(), schedule_delay_millis=50))
tracer = trace.get_tracer("py_spans")
report = {}
lock = threading.Lock()
started = threading.Barrier(3)


def outer_work_a():
    burn(0.03)


def inner_work_a():
    burn(0.03)


def free_work_a():
    burn(0.03)


def outer_work_b():
    burn(0.03)


def inner_work_b():
    burn(0.03)


def free_work_b():
    burn(0.03)


WORK = {"a": (outer_work_a, inner_work_a, free_work_a), "b": (outer_work_b, inner_work_b, free_work_b)}


def worker(name):
    outer_fn, inner_fn, free_fn = WORK[name]
    outer = tracer.start_span(f"outer-{name}")
    inner = tracer.start_span(f"inner-{name}", context=trace.set_span_in_context(outer))
    with lock:
        report[name] = {"tid": threading.get_native_id(), outer_fn.__name__: ids(outer),
                        inner_fn.__name__: ids(inner)}
    started.wait()
    while True:
        with trace.use_span(outer):
            outer_fn()
            with trace.use_span(inner):
                inner_fn()
            outer_fn()  # back in outer after detach
        free_fn()
        # A short span of its own, the usual way: ids not checked.
        with tracer.start_as_current_span(f"short-{name}"):
            pass


for name in WORK:
    threading.Thread(target=worker, args=(name,), daemon=True, name=f"worker-{name}").start()
started.wait()
if mode == "internal":
    report["internal_tid"] = next(t.native_id for t in threading.enumerate() if t.name.startswith("OtelBatch"))
if mode == "noinstall":
    import splunk_profd_context

    report["installed"] = splunk_profd_context.installed()
say(report)
say("ready")
threading.Event().wait()
