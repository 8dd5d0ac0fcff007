"""Python target of tests/test_python_new_threads.py: thread-per-request.

Every request is a new OS thread that, as its first act in Python code of
its own, notes the time and then spins SPIN_MS in pure Python (request_work).
When it ends it appends {"tid", "span_ns": [begin, end]} as one JSON line
to the file argv[1] (tid: threading.get_native_id(), begin and end in
CLOCK_REALTIME ns).  The main thread starts the next request 5 ms after the
last one was joined.  Prints "ready" once the first request is done; runs
until killed.  No third-party module: runs on CPython 3.9 to 3.15 and on
free-threaded builds.
"""

import json
import sys
import threading
import time

SPIN_MS = 25
report = open(sys.argv[1], "a", buffering=1)


def request_work(until_ns):
    n = 0
    while time.time_ns() < until_ns:
        n += 1
    return n


def request():
    begin = time.time_ns()
    request_work(begin + SPIN_MS * 1000 * 1000)
    end = time.time_ns()
    report.write(json.dumps({"tid": threading.get_native_id(), "span_ns": [begin, end]}) + "\n")


ready = False
while True:
    worker = threading.Thread(target=request)
    worker.start()
    worker.join()
    if not ready:
        print("ready", flush=True)
        ready = True
    time.sleep(0.005)
