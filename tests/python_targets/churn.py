"""Python target of tests/test_python.py: a thread list in constant churn.

Creates and joins about RATE short-lived threads per second (default 1000,
argv[1] overrides), each running a little Python, in batches of BATCH.
No other thread is busy: one would hold the GIL for whole switch
intervals while Thread.start() waits for each new thread, and cap the
rate.  Prints "ready" after the first batch, then one line "threads=N"
per second with the number of threads created so far; runs until killed.  Runs on CPython 3.9 to 3.14.
"""

import sys
import threading
import time

RATE = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
BATCH = 10


def short_lived(n):
    return sum(i * i for i in range(n))


def main():
    created = 0
    started = time.monotonic()
    next_report = started + 1
    ready = False
    while True:
        batch = [threading.Thread(target=short_lived, args=(50,)) for _ in range(BATCH)]
        for t in batch:
            t.start()
        for t in batch:
            t.join()
        created += BATCH
        now = time.monotonic()
        if not ready:
            print("ready", flush=True)
            ready = True
        if now >= next_report:
            print(f"threads={created}", flush=True)
            next_report += 1
        ahead = started + created / RATE - now
        if ahead > 0:
            time.sleep(ahead)


main()
