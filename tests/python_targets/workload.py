"""Python target of tests/test_python.py: threads with exactly known stacks.

Runs on CPython 3.9 to 3.14 (no newer syntax).  Starts the threads below,
waits until each has reached its loop, prints "ready", then one line of
JSON {"pid", "version", "threads": {python name: {"ident", "native_id",
"comm"}}} (the main thread keeps its comm: None), then spins in the main
thread until killed.  On SIGUSR1 it prints the interpreter's own view of
every thread's stack as one line of JSON {"frames": {ident: [[name, file,
line], ...]}}, leaf first, name = co_qualname (3.11+) or co_name: the test
checks its expectations against it.

Each loop that a thread spends its time in is written on ONE line, marked
`# LINE:<name>`; the test reads those markers to know the expected line
numbers.  Thread (Python name = OS name, comm):

  MainThread  Busy.spin                     <- <module>
  recurse-40  recurse x 40 (leaf spins)     <- recurse_main <- Thread.run ...
  sleeper     time.sleep in sleeper          <- Thread.run ...
  generator   produce (generator body)       <- consume <- Thread.run ...
  coroutine   crunch (async def)             <- coro_main <- asyncio ... <- coro_thread <- Thread.run ...
  lambda      <lambda> (module level)        <- lambda_loop <- Thread.run ...
  callback    compare (ctypes callback)      <- [qsort, libffi, _ctypes] <- sort_forever <- Thread.run ...
              (Python -> libc qsort via ctypes -> a Python comparator that spins)
"""

import asyncio
import ctypes
import json
import os
import signal
import sys
import threading
import time

LIBC = ctypes.CDLL("libc.so.6", use_errno=True)
PR_SET_NAME = 15
DEPTH = 40

started = {}  # python thread name -> threading.Event, set when in its loop
info = {}  # python thread name -> {"ident", "native_id", "comm"}
info_lock = threading.Lock()


def arrived():
    """Names the calling OS thread like its Python thread, records its ids
    and tells the main thread it is about to enter its loop."""
    me = threading.current_thread()
    comm = me.name.encode()[:15]
    LIBC.prctl(PR_SET_NAME, ctypes.c_char_p(comm), 0, 0, 0)
    with info_lock:
        info[me.name] = {"ident": threading.get_ident(), "native_id": threading.get_native_id(), "comm": comm.decode()}
    started[me.name].set()


def dump_frames(signum, interrupted):
    """SIGUSR1: prints every thread's Python stack as the interpreter sees
    it (the main thread's from the frame the signal interrupted)."""
    stacks = {}
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            frame = interrupted
        stack = []
        while frame is not None:
            code = frame.f_code
            stack.append([getattr(code, "co_qualname", code.co_name), code.co_filename, frame.f_lineno])
            frame = frame.f_back
        stacks[ident] = stack
    print(json.dumps({"frames": stacks}), flush=True)


class Busy:
    def spin(self):
        x = 0
        while True: x += 1  # LINE:busy_spin


def recurse(depth):
    if depth > 1:
        recurse(depth - 1)  # LINE:recurse_call
    arrived()
    x = 0
    while True: x += 1  # LINE:recurse_spin


def recurse_main():
    recurse(DEPTH)  # LINE:recurse_main


def sleeper():
    arrived()
    while True: time.sleep(3600)  # LINE:sleep


def produce():
    arrived()
    while True:
        n = 0
        while n < 10000000: n += 1  # LINE:gen_spin
        yield n


def consume():
    for value in produce(): pass  # LINE:gen_consume


async def crunch():
    arrived()
    x = 0
    while True: x += 1  # LINE:coro_spin


async def coro_main():
    await crunch()  # LINE:coro_await


def coro_thread():
    asyncio.run(coro_main())  # LINE:coro_run


# The lambda releases the GIL (os.sched_yield) and so waits for it again
# inside itself: a thread mostly waits for the GIL among 7 busy ones, and
# it would otherwise wait at the loop's own eval-breaker check, outside
# the lambda.
BUMP = lambda n: n + 1 + (os.sched_yield() or 0)  # LINE:lambda_body


def lambda_loop():
    arrived()
    n = 0
    while True: n = BUMP(n)  # LINE:lambda_call


COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
qsort = LIBC.qsort
qsort.restype = None
qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, COMPARE]
# A callback spins far longer than a test runs: a thread re-entering Python
# from C waits for the GIL in PyGILState_Ensure *before* its Python frame
# exists, so short callbacks would put a sizeable share of the samples
# outside them.  The thread is "ready" once inside its first callback.
CALLBACK_SPIN = 10 ** 10


def compare(a, b):
    if "callback" not in info:
        arrived()
    n = 0
    while n < CALLBACK_SPIN: n += 1  # LINE:callback_spin
    return a[0] - b[0]


def sort_forever():
    values = (ctypes.c_int * 16)()
    callback = COMPARE(compare)
    while True:
        values[:] = range(16, 0, -1)
        qsort(values, len(values), ctypes.sizeof(ctypes.c_int), callback)  # LINE:callback_qsort


THREADS = [
    ("recurse-40", recurse_main),
    ("sleeper", sleeper),
    ("generator", consume),
    ("coroutine", coro_thread),
    ("lambda", lambda_loop),
    ("callback", sort_forever),
]


def main():
    for name, target in THREADS:
        started[name] = threading.Event()
        threading.Thread(name=name, target=target, daemon=True).start()
    for name, event in started.items():
        if not event.wait(30):
            sys.exit(f"thread {name} did not start")
    me = threading.current_thread()
    info[me.name] = {"ident": threading.get_ident(), "native_id": threading.get_native_id(), "comm": None}
    signal.signal(signal.SIGUSR1, dump_frames)
    print("ready", flush=True)
    print(json.dumps({"pid": os.getpid(), "version": sys.version, "threads": info}), flush=True)


main()
Busy().spin()  # LINE:module_call
