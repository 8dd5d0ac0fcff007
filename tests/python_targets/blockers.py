"""Python target of tests/test_python_blockers.py: threads that block and
stay blocked.  Runs on CPython 3.9 to 3.14.

  MainThread      sys.stdin.readline() in main      <- <module>
  waits-on-event  Event.wait in on_event            <- Thread.run ...
  sleeps-an-hour  time.sleep in sleep_long          <- Thread.run ...
  waits-on-lock   Lock.acquire in on_lock           <- Thread.run ...

With argv[1] == "native", a thread without any Python state (libc's
sleep as its start routine) is started first.  Prints "ready".  With
argv[1] == "now" the three threads are then started at once; otherwise when the line "start" arrives on stdin (threads started
after a profiler attached).  Each time they are started (and have reached
the call they block in, give or take a few bytecodes) one line of JSON
{"pid", "version", "threads": {python name: {"ident", "native_id"}}} is
printed; native_id is the thread's id in its own PID namespace.  The calls
they block in are each on ONE line, marked `# LINE:<name>`.
"""

import ctypes
import json
import os
import sys
import threading
import time

NAMES = ("waits-on-event", "sleeps-an-hour", "waits-on-lock")

event = threading.Event()
lock = threading.Lock()
lock.acquire()
info = {}
arrived = threading.Semaphore(0)


def note():
    me = threading.current_thread()
    info[me.name] = {"ident": threading.get_ident(), "native_id": threading.get_native_id()}
    arrived.release()


def on_event():
    note()
    event.wait()  # LINE:event_wait


def sleep_long():
    note()
    time.sleep(3600)  # LINE:sleep_long


def on_lock():
    note()
    lock.acquire()  # LINE:lock_acquire


def start():
    for name, body in zip(NAMES, (on_event, sleep_long, on_lock)):
        threading.Thread(name=name, target=body, daemon=True).start()
    for _ in NAMES:
        arrived.acquire()
    me = threading.current_thread()
    info[me.name] = {"ident": threading.get_ident(), "native_id": threading.get_native_id()}
    print(json.dumps({"pid": os.getpid(), "version": sys.version, "threads": info}), flush=True)


def start_native():
    """A thread with no Python state at all: libc's sleep(3600) as a
    pthread start routine (its argument arrives as the void *)."""
    libc = ctypes.CDLL(None)
    thread = ctypes.c_ulong()
    start_routine = ctypes.cast(libc.sleep, ctypes.c_void_p)
    assert libc.pthread_create(ctypes.byref(thread), None, start_routine, ctypes.c_void_p(3600)) == 0


def main():
    if sys.argv[1:] == ["native"]:
        start_native()
    print("ready", flush=True)
    if sys.argv[1:] == ["now"]:
        start()
    while True:
        line = sys.stdin.readline()  # LINE:main_read
        if not line:
            return
        if line.strip() == "start":
            start()


main()
