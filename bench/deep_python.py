"""Benchmark target: one busy thread at the bottom of a DEPTH-frame Python
call chain (argv[1], default 100), so pause and unwind cost of a known
Python stack depth can be measured."""
import sys
import threading

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 100


def descend(level):
    if level <= 1:
        x = 0
        while True:
            x += 1
    return descend(level - 1)


threading.Thread(target=descend, args=(DEPTH - 2,), name="deep", daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
