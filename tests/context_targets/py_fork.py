"""Fork safety: the parent, an os.fork() child and a multiprocessing
(fork) child each run their own span around process_work_<who>() and
free work outside it.  Prints {"parent"|"fork"|"mp": {"pid", "ids"}} then
"ready".  Children exit when the parent does."""

import json
import multiprocessing
import os
import sys
import threading

import splunk_profd_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_common import LeadingZeroIds, burn, ids, say

splunk_profd_context.install()
trace.set_tracer_provider(TracerProvider(id_generator=LeadingZeroIds()))
tracer = trace.get_tracer("py_fork")
parent_pid = os.getpid()


def process_work_parent():
    burn(0.03)


def process_work_fork():
    burn(0.03)


def process_work_mp():
    burn(0.03)


def free_work():
    burn(0.03)


def run(who, write_fd):
    fn = {"parent": process_work_parent, "fork": process_work_fork, "mp": process_work_mp}[who]
    span = tracer.start_span(f"span-{who}")
    if write_fd is not None:
        os.write(write_fd, (json.dumps({who: {"pid": os.getpid(), "ids": ids(span)}}) + "\n").encode())
    while os.getppid() == parent_pid:
        with trace.use_span(span):
            fn()
        free_work()


def child_main(who, write_fd):
    try:
        run(who, write_fd)
    finally:
        os._exit(0)


read_fd, write_fd = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read_fd)
    child_main("fork", write_fd)
mp = multiprocessing.get_context("fork").Process(target=child_main, args=("mp", write_fd), daemon=True)
mp.start()
os.close(write_fd)
report = {}
with os.fdopen(read_fd) as pipe:
    for _ in range(2):
        report.update(json.loads(pipe.readline()))
parent_span = tracer.start_span("span-parent")
report["parent"] = {"pid": os.getpid(), "ids": ids(parent_span)}


def parent_loop():
    while True:
        with trace.use_span(parent_span):
            process_work_parent()
        free_work()


threading.Thread(target=parent_loop, daemon=True).start()
say(report)
say("ready")
threading.Event().wait()
