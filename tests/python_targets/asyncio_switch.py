"""50 asyncio tasks that each spin ~20 us and yield (tests/test_asyncio.py).

Prints "ready", then a JSON line with the version, then runs until killed.
With argv[1] == "gen", a plain loop enters a generator-based context
manager instead (contextlib.contextmanager), spinning inside it."""

import asyncio
import contextlib
import json
import sys
import time


def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:  # LINE:spin
        pass


async def small_task():
    while True:
        spin(20)
        await asyncio.sleep(0)


async def main():
    tasks = [asyncio.create_task(small_task(), name=f"small-{i}") for i in range(50)]
    say()
    await asyncio.gather(*tasks)


@contextlib.contextmanager
def managed():
    spin(10)
    yield
    spin(10)


def with_managed():
    with managed():
        spin(5)


def say():
    print("ready", flush=True)
    print(json.dumps({"version": sys.version.split()[0]}), flush=True)


if len(sys.argv) > 1 and sys.argv[1] == "gen":
    say()
    while True:
        with_managed()
else:
    asyncio.run(main())
