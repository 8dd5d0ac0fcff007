"""Python target of tests/test_python.py for the thread.gil and thread.name
labels.  Runs on CPython 3.9 to 3.14.

  MainThread                       time.sleep (never holds the GIL)
  payment-worker-with-a-long-name  pure-Python loop (holds the GIL)
  sleeper-with-a-long-name-too     time.sleep (never holds the GIL)

The sleeper's __dict__ is read once, which makes 3.11+ give it a real
dict object instead of the values its type manages (the other path of
the name reader).  OS thread names are left alone: comm is the interpreter's ("python3"),
or on 3.14, which names OS threads itself, the first 15 bytes of the
Python name.  Prints "ready", then one line of JSON {"pid", "version",
"threads": {python name: {"ident", "native_id"}}}, then sleeps until
killed.
"""

import json
import os
import sys
import threading
import time

BUSY = "payment-worker-with-a-long-name"
SLEEPER = "sleeper-with-a-long-name-too"

info = {}
started = {}


def arrived():
    me = threading.current_thread()
    info[me.name] = {"ident": threading.get_ident(), "native_id": threading.get_native_id()}
    started[me.name].set()


def busy():
    arrived()
    x = 0
    while True:
        x += 1


def sleeper():
    arrived()
    while True:
        time.sleep(3600)


def main():
    threads = {}
    for name, target in ((BUSY, busy), (SLEEPER, sleeper)):
        started[name] = threading.Event()
        threads[name] = threading.Thread(name=name, target=target, daemon=True)
        threads[name].start()
    for name, event in started.items():
        if not event.wait(30):
            sys.exit(f"thread {name} did not start")
    assert vars(threads[SLEEPER])["_name"] == SLEEPER
    me = threading.current_thread()
    info[me.name] = {"ident": threading.get_ident(), "native_id": threading.get_native_id()}
    print("ready", flush=True)
    print(json.dumps({"pid": os.getpid(), "version": sys.version, "threads": info}), flush=True)
    while True:
        time.sleep(3600)


main()
