"""Named asyncio tasks taking turns, and a plain thread (tests/test_asyncio.py).

Each task runs its own coroutine function, so a sample's stack says which
task ran it: alpha_work in the task named "alpha", beta_work in "beta",
gamma_work in a task with the default name (Task-N), and plain_spin in a
thread that runs no event loop.  Prints "ready", then a JSON line with the
version and gamma's name, then runs until killed."""

import asyncio
import json
import sys
import threading
import time


def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


async def alpha_work():
    while True:
        spin(200)
        await asyncio.sleep(0)


async def beta_work():
    while True:
        spin(300)
        await asyncio.sleep(0)


async def gamma_work():
    while True:
        spin(200)
        await asyncio.sleep(0)


def plain_spin():
    while True:
        spin(1000)
        time.sleep(0.002)


async def main():
    tasks = [
        asyncio.create_task(alpha_work(), name="alpha"),
        asyncio.create_task(beta_work(), name="beta"),
        asyncio.create_task(gamma_work()),
    ]
    threading.Thread(target=plain_spin, name="plain", daemon=True).start()
    print("ready", flush=True)
    print(json.dumps({"version": sys.version.split()[0], "gamma": tasks[2].get_name()}), flush=True)
    await asyncio.gather(*tasks)


asyncio.run(main())
