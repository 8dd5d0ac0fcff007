"""Python target of tests/test_python_gil_lines.py: threads that spend most
of their time waiting for the GIL.

Three threads run crunch() at once, so at any moment two of them wait in
take_gil() at an eval-breaker check inside the loop.  Their Python frame
must still name a line of the loop (issue 17 item 8: on 3.11 the line of a
GIL waiter was -1).  Prints one line of JSON {"pid", "version", "threads":
{name: {"ident", "native_id"}}} once the threads run, then sleeps.
"""

import json
import os
import sys
import threading
import time

NAMES = ("crunch-1", "crunch-2", "crunch-3")
started = threading.Barrier(len(NAMES) + 1)
info = {}


def crunch():
    me = threading.current_thread()
    info[me.name] = {"ident": threading.get_ident(), "native_id": threading.get_native_id()}
    started.wait()
    total = 0
    while True:  # LINE:loop_head
        total = (total + 12345) * 7 % 1000003  # LINE:loop_body


for name in NAMES:
    threading.Thread(target=crunch, name=name, daemon=True).start()
started.wait()
print(json.dumps({"pid": os.getpid(), "version": sys.version.split()[0], "threads": info}), flush=True)
time.sleep(3600)
