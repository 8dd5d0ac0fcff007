"""A ddtrace-instrumented app (ddtrace from PyPI, OTEP 4947 by default):
two threads each run one long span of CPU work.  Prints one JSON line
{"<tid>": [trace_id_hex32, span_id_hex16], ...} (ddtrace's own ids), then
"ready"."""

import json
import sys
import threading

from ddtrace.trace import tracer

ids = {}
lock = threading.Lock()
ready = threading.Barrier(3)


def in_span_work():
    x = 1
    while True:
        for _ in range(10000):
            x = (x * 6364136223846793005 + 1) & 0xFFFFFFFFFFFFFFFF


def worker(name):
    with tracer.trace(name) as span:
        with lock:
            ids[threading.get_native_id()] = [f"{span.trace_id:032x}", f"{span.span_id:016x}"]
        ready.wait()
        in_span_work()


for n in ("a", "b"):
    threading.Thread(target=worker, args=(n,), daemon=True).start()
ready.wait()
print(json.dumps(ids), flush=True)
print("ready", flush=True)
threading.Event().wait()
