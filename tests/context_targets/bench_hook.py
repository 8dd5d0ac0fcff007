"""Bench (not a test): cost of an opentelemetry.context attach/detach pair
with and without the splunk-profd writer, on a context holding a span.
Usage: PYTHONPATH=<pip-installed context/python> python3 bench_hook.py [nosegment]
("nosegment": install(segment=False), the OTEP 4947 record only; a package
older than 0.3.0 has no such argument and is installed as it is)."""

import sys
import time
import timeit

from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider

import splunk_profd_context

tracer = TracerProvider().get_tracer("bench")
span_a, span_b = tracer.start_span("a"), tracer.start_span("b")
ctx_a = trace.set_span_in_context(span_a)
ctx_b = trace.set_span_in_context(span_b, ctx_a)
outer = context.attach(ctx_a)


def pair():
    context.detach(context.attach(ctx_b))  # a different span: both writes happen


def best(n=20000, repeat=40):
    # The thread's CPU time, and many short repeats: on a shared machine
    # the minimum is the code's cost, the rest is other processes.
    return min(timeit.repeat(pair, number=n, repeat=repeat, timer=time.thread_time)) / n * 1e9


def install():
    if sys.argv[1:] == ["nosegment"]:
        splunk_profd_context.install(segment=False)
    else:
        splunk_profd_context.install()


plain = best()
install()
records = getattr(splunk_profd_context, "thread_records_published", lambda: False)()
hooked = best()
splunk_profd_context.uninstall()
plain2 = best()
print(f"attach+detach pair: plain {min(plain, plain2):.0f} ns, with writer {hooked:.0f} ns, "
      f"added {hooked - min(plain, plain2):.0f} ns (OTEP records: {records}, segment: {sys.argv[1:] != ['nosegment']})")
