"""Three asyncio tasks, each inside its own span (real opentelemetry-api/
-sdk), taking turns every ~200 us (tests/test_asyncio.py).

work_X runs only inside task X's span.  Prints "ready", then
{"version": ..., "X": [trace_id, span_id], ...}, then runs until killed.
With "writer": the splunk_profd_context writer publishes each thread's
span slot (which names whichever task attached last)."""

import asyncio
import json
import sys
import time

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

if len(sys.argv) > 1 and sys.argv[1] == "writer":
    import splunk_profd_context

    splunk_profd_context.install()

trace.set_tracer_provider(TracerProvider())
tracer = trace.get_tracer("py_task_spans")
ids = {}


def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def work_a():
    spin(200)


def work_b():
    spin(200)


def work_c():
    spin(200)


async def task(name, work, ready):
    with tracer.start_as_current_span(f"span-{name}") as span:
        sc = span.get_span_context()
        ids[name] = [format(sc.trace_id, "032x"), format(sc.span_id, "016x")]
        ready.set()
        while True:
            work()
            await asyncio.sleep(0)


async def main():
    events = [asyncio.Event() for _ in range(3)]
    tasks = [
        asyncio.create_task(task(n, w, e), name=n)
        for n, w, e in zip("abc", (work_a, work_b, work_c), events)
    ]
    for e in events:
        await e.wait()
    print("ready", flush=True)
    print(json.dumps({"version": sys.version.split()[0], **ids}), flush=True)
    await asyncio.gather(*tasks)


asyncio.run(main())
