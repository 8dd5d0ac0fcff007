"""A span that crosses fork (tests/test_python_otep.py): the main thread
enters span S and forks inside it; the child keeps running in S without
any attach of its own (inherited_work), the parent leaves S and runs
free_work.  Prints {"parent": pid, "child": pid, "ids": S's ids} then
"ready".  The child exits when the parent does."""

import os

import splunk_profd_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from otel_common import LeadingZeroIds, burn, ids, say

splunk_profd_context.install()
trace.set_tracer_provider(TracerProvider(id_generator=LeadingZeroIds()))
span = trace.get_tracer("py_otep_fork").start_span("crosses-fork")
parent = os.getpid()


def inherited_work():
    burn(0.03)


def free_work():
    burn(0.03)


with trace.use_span(span):
    child = os.fork()
    if child == 0:
        while os.getppid() == parent:
            inherited_work()
        os._exit(0)
say({"parent": parent, "child": child, "ids": ids(span), "records": splunk_profd_context.thread_records_published()})
say("ready")
while True:
    free_work()
