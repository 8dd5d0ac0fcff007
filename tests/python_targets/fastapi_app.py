"""A FastAPI app served by uvicorn on the asyncio loop (tests/test_asyncio_fastapi.py).

GET /work awaits, computes in traced_crunch ~1 ms inside
tracer.start_as_current_span (a generator-based context manager, real
opentelemetry-sdk), awaits, leaves the span and computes in plain_crunch:
each request is a uvicorn task (Task-N) whose stack runs from the event
loop through Starlette and FastAPI down to the endpoint.  The
splunk_profd_context writer is installed (per-thread span slots).

With the argument "no-task-tail" the handler has no task_tail: the task
ends right after plain_crunch (its last sample is soon followed by the
task's end, and its memory's reuse), which the stop window's copy of the
name must not notice (tests/test_asyncio_fastapi.py).

With "no-otel" (3.9: the OpenTelemetry the tests copy needs 3.10+) the
span is a plain generator-based context manager of the same shape, and
the writer is not installed.

Listens on 127.0.0.1 on a port the kernel picks; prints "ready", then
{"version": ..., "port": ...}, then serves until killed."""

import asyncio
import contextlib
import json
import socket
import sys
import time

from fastapi import FastAPI
import uvicorn

TASK_TAIL = "no-task-tail" not in sys.argv[1:]

if "no-otel" in sys.argv[1:]:
    @contextlib.contextmanager
    def start_span(name):
        yield name
else:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    import splunk_profd_context

    splunk_profd_context.install()
    trace.set_tracer_provider(TracerProvider())
    start_span = trace.get_tracer("fastapi_app").start_as_current_span
app = FastAPI()


def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def traced_crunch():
    spin(1000)


def plain_crunch():
    spin(1000)


def span_tail():
    spin(1000)


def task_tail():
    spin(1000)


async def handle():
    with start_span("work"):
        await asyncio.sleep(0)
        traced_crunch()
        await asyncio.sleep(0)
        # The span is read after the resume: a sample in traced_crunch read
        # late must not find it ended already.
        span_tail()
    plain_crunch()
    await asyncio.sleep(0)
    # So is the task's name: a sample in plain_crunch read late must not
    # find the task finished (and freed) already.
    if TASK_TAIL:
        task_tail()


@app.get("/work")
async def work():
    await handle()
    return {"ok": True}


class ReadyServer(uvicorn.Server):
    """Says "ready" once the socket accepts (startup() has run)."""

    async def startup(self, sockets=None):
        await super().startup(sockets=sockets)
        print("ready", flush=True)
        print(json.dumps({"version": sys.version.split()[0], "port": PORT}), flush=True)


sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
PORT = sock.getsockname()[1]
# loop="asyncio": uvicorn would take uvloop (which Debian's uvicorn pulls
# in) whose loop is not asyncio's; http="h11" for the same on every version.
config = uvicorn.Config(app, loop="asyncio", http="h11", lifespan="off", log_level="warning", access_log=False)
ReadyServer(config).run(sockets=[sock])
