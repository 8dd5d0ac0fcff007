"""A thread that recurses fast (tests/test_python_recursion.py).

recurse(n) goes n levels deep and back, to depths 5, 30, 60, 25 and 10 in
turn, a few microseconds each: by the time a walk after the resume reads
a frame the stop window did not copy, the chain has moved.  On 3.9/3.10
the frames are heap objects that CPython reuses LIFO (free list, each
code object's zombie frame), so a live read finds frames of another call.

Prints "ready", then a JSON line with the version, then runs until killed."""

import json
import sys


def recurse(n):
    if n == 0:
        return 0
    return recurse(n - 1) + 1  # LINE:recurse


def main():
    while True:
        for depth in (5, 30, 60, 25, 10):
            recurse(depth)


print("ready", flush=True)
print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3]}), flush=True)
main()
