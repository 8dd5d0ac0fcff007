"""Daemon-mode benchmark target (bench/run.py question 7): an idle Python
service.  Usage: python3 bench/idle_threads.py [THREADS]

THREADS (default 10) threads in all, the main thread included, every one
blocked in the kernel a few Python frames deep: time.sleep, select on a
pipe nobody writes, threading.Event.wait, queue.Queue.get and socket recv,
in turn.  One of them (the first, "heartbeat") wakes every 0.5 s, as a
service's metrics or keep-alive timer would, so the daemon sees a new stack
for it at most ticks; the others never run again.  Prints "ready" once
every thread is blocked.
"""
import os
import queue
import select
import socket
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10
KEEP = []


def heartbeat(started):
    started.release()
    while True:
        time.sleep(0.5)


def sleeper(started):
    started.release()
    while True:
        time.sleep(3600)


def selector(started):
    r, w = os.pipe()
    KEEP.append((r, w))
    started.release()
    select.select([r], [], [])


def waiter(started):
    ev = threading.Event()
    KEEP.append(ev)
    started.release()
    ev.wait()


def getter(started):
    q = queue.Queue()
    KEEP.append(q)
    started.release()
    q.get()


def receiver(started):
    a, b = socket.socketpair()
    KEEP.append((a, b))
    started.release()
    a.recv(1)


def service(kind, started):
    """A couple of frames of "application" above the blocking call."""
    return handler(kind, started)


def handler(kind, started):
    return kind(started)


KINDS = [sleeper, selector, waiter, getter, receiver]


def main():
    started = threading.Semaphore(0)
    workers = [heartbeat] + [KINDS[i % len(KINDS)] for i in range(max(0, N - 2))]
    for fn in workers[:N - 1]:
        threading.Thread(target=service, args=(fn, started), name=fn.__name__, daemon=True).start()
    for _ in workers[:N - 1]:
        started.acquire()
    time.sleep(0.1)  # let the last ones reach their blocking call
    print("ready", flush=True)
    service(waiter, threading.Semaphore(0))  # the main thread blocks too


main()
