"""A thread-per-request server in miniature: every request is a new OS
thread that opens a span (real opentelemetry-api/-sdk) as its first act and
spins in it, 10 ms in request_first_10ms, then 15 ms in request_rest.
When a request ends its thread appends {"tid", "ids": [trace, span],
"span_ns": [begin, end]} as one JSON line to the file argv[1], begin and end
in CLOCK_REALTIME ns, taken inside the span.  Prints "ready" once the writer is installed.

Samples in request_first_10ms are a new thread's first 10 ms inside its
span: splunk-profd must label them from the first one."""

import json
import sys
import threading
import time

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_common import LeadingZeroIds, burn, ids, say

import splunk_profd_context

splunk_profd_context.install()
trace.set_tracer_provider(TracerProvider(id_generator=LeadingZeroIds()))
tracer = trace.get_tracer("py_new_threads")
report = open(sys.argv[1], "a", buffering=1)


def request_first_10ms():
    burn(0.010)


def request_rest():
    burn(0.015)


def handle_request():
    with tracer.start_as_current_span("request") as span:
        begin = time.time_ns()
        request_first_10ms()
        request_rest()
        end = time.time_ns()
    report.write(json.dumps({"tid": threading.get_native_id(), "ids": ids(span), "span_ns": [begin, end]}) + "\n")


say("ready")
while True:
    request = threading.Thread(target=handle_request)
    request.start()
    request.join()
    time.sleep(0.005)
