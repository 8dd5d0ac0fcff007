"""Benchmark targets for bench/run.py (Python workloads).

Usage: python3 bench/workloads.py MODE COUNTER_FILE [ARG]

Every workload publishes its progress in COUNTER_FILE (64 bytes, mmap'd,
eight little-endian u64 slots) so the harness reads throughput from outside
without signals or pipes that a profiler could disturb:

  slot 0   units of work done (loop iterations, requests, ...)
  slot 1-3 split: CPU ns spent in f1, f2, f3 (time.thread_time_ns)
  slot 4   epoll: loop iterations of the epoll_wait thread
  slot 5   epoll: EINTRs seen by epoll_wait
  slot 6   epoll: sum of wake-up lateness in us
  slot 7   epoll: max wake-up lateness in us

Modes:
  cpu              (1) one CPU-bound thread
  io [N]           (2) one busy thread + N (default 100) threads blocked in
                   socket recv / queue.get / select
  split [N]        (3) N (default 8) busy threads; each loop calls f1, f2, f3
                   with work 50:30:20 (identical loop bodies, so the split
                   of CPU time is the split of iterations); plus one thread
                   that publishes their per-thread totals every 10 ms
  deep DEPTH       one busy thread at the bottom of a DEPTH-frame stack
  threads N        one busy thread + N-1 threads blocked in queue.get
  epoll            one thread looping on libc epoll_wait (2 ms timeout, no
                   events) through ctypes, counting EINTR and wake-up
                   lateness; no busy thread, so the GIL adds no lateness
  idle10 [PCT]     light load: 1 thread busy PCT% (default 20) of each 10 ms
                   + 9 blocked
  aiosplit [N]     asyncio: one event loop running N (default 50) tasks;
                   each calls f1, f2, f3 (as split does, same slots) and
                   yields to the loop after each call, so tasks switch
                   about every 0.1 ms (issue 18's asyncio workload)
"""
import asyncio
import ctypes
import mmap
import os
import queue
import select
import socket
import struct
import sys
import threading
import time

sys.setrecursionlimit(20000)
threading.stack_size(64 * 1024 * 1024)

MODE = sys.argv[1]
with open(sys.argv[2], "r+b") as _f:
    MM = mmap.mmap(_f.fileno(), 64)
ARG = int(sys.argv[3]) if len(sys.argv) > 3 else None


def put(slot, value):
    struct.pack_into("<Q", MM, slot * 8, value)


def busy(chunk=2000):
    n = 0
    while True:
        x = 0
        for i in range(chunk):
            x += i * i
        n += 1
        put(0, n)


def start(fn, *args):
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


def blockers(n):
    """n threads blocked forever, a third each in recv, queue.get, select."""
    keep = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            a, b = socket.socketpair()
            keep.append((a, b))
            start(a.recv, 1)
        elif kind == 1:
            q = queue.Queue()
            keep.append(q)
            start(q.get)
        else:
            r, w = os.pipe()
            keep.append((r, w))
            start(select.select, [r], [], [])
    return keep


# f1 takes ~0.3 ms, well under the 5 ms GIL switch interval, so each time
# slice mixes many f1/f2/f3 calls and a preempted thread waits at a point
# drawn in proportion to the CPU time of each function.
WORK = 2000


def f1():
    x = 0
    for i in range(WORK * 5):
        x += i * i
    return x


def f2():
    x = 0
    for i in range(WORK * 3):
        x += i * i
    return x


def f3():
    x = 0
    for i in range(WORK * 2):
        x += i * i
    return x


# Each worker adds up its own CPU time per function, and a publisher thread
# sums them into the counter every 10 ms.  The workers share no lock: a
# shared one made a convoy (a worker preempted while holding it stalled the
# other seven, which then spent most of their time blocked on it, not busy).
_split_totals = []  # per worker: [f1 ns, f2 ns, f3 ns, iterations], written by it only


def split_worker():
    clock = time.thread_time_ns
    mine = [0, 0, 0, 0]
    _split_totals.append(mine)
    while True:
        t0 = clock()
        f1()
        t1 = clock()
        f2()
        t2 = clock()
        f3()
        t3 = clock()
        mine[0] += t1 - t0
        mine[1] += t2 - t1
        mine[2] += t3 - t2
        mine[3] += 1


def split_publisher():
    while True:
        time.sleep(0.01)
        totals = list(_split_totals)
        for slot in range(3):
            put(slot + 1, sum(t[slot] for t in totals))
        put(0, sum(t[3] for t in totals))


async def aio_split_task(totals):
    clock = time.thread_time_ns
    while True:
        for slot, fn in ((0, f1), (1, f2), (2, f3)):
            t0 = clock()
            fn()
            totals[slot] += clock() - t0
            await asyncio.sleep(0)
        totals[3] += 1


async def aio_split_main(n):
    totals = [0, 0, 0, 0]  # one event loop thread: no lock needed
    tasks = [asyncio.create_task(aio_split_task(totals), name=f"split-{i}") for i in range(n)]
    while True:
        await asyncio.sleep(0.01)
        for slot in range(3):
            put(slot + 1, totals[slot])
        put(0, totals[3])
    return tasks


def descend(level):
    if level <= 1:
        return busy()
    return descend(level - 1)


def epoll_loop():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    epfd = libc.epoll_create1(0)
    r, w = os.pipe()
    ev = struct.pack("<IQ", 1, 0)  # EPOLLIN, data (packed like the kernel's)
    buf = ctypes.create_string_buffer(ev)
    assert libc.epoll_ctl(epfd, 1, r, buf) == 0
    out = ctypes.create_string_buffer(12 * 4)
    loops = eintr = late_sum = late_max = 0
    while True:
        t0 = time.monotonic_ns()
        rc = libc.epoll_wait(epfd, out, 4, 2)
        if rc < 0 and ctypes.get_errno() == 4:
            eintr += 1
        late = max(0, (time.monotonic_ns() - t0) // 1000 - 2000)
        loops += 1
        late_sum += late
        late_max = max(late_max, late)
        put(4, loops)
        put(5, eintr)
        put(6, late_sum)
        put(7, late_max)


def idle_busy(pct):
    n, busy_s = 0, 0.010 * pct / 100
    while True:
        t0 = time.monotonic()
        x = 0
        while time.monotonic() - t0 < busy_s:
            for i in range(50):
                x += i
        n += 1
        put(0, n)
        time.sleep(0.010 - busy_s)


def main():
    keep = None
    if MODE == "cpu":
        start(busy)
    elif MODE == "io":
        keep = blockers(ARG if ARG is not None else 100)
        start(busy)
    elif MODE == "split":
        for _ in range(ARG or 8):
            start(split_worker)
        start(split_publisher)
    elif MODE == "deep":
        start(descend, max(1, (ARG or 100) - 3))
    elif MODE == "threads":
        keep = blockers(max(0, (ARG or 1) - 1))
        start(busy)
    elif MODE == "epoll":
        start(epoll_loop)
    elif MODE == "aiosplit":
        start(lambda: asyncio.run(aio_split_main(ARG or 50)))
    elif MODE == "idle10":
        keep = blockers(9)
        start(idle_busy, ARG if ARG is not None else 20)
    else:
        sys.exit(f"unknown mode {MODE}")
    print("ready", flush=True)
    threading.Event().wait()
    return keep


if __name__ == "__main__":
    main()
