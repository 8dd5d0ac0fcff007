"""Eager tasks (3.12+; tests/test_asyncio_dump.py): with
asyncio.eager_task_factory, "eager-waiter" runs its first step at once and
waits on an Event; "eager-hog" never leaves its first step (it sleeps in
time.sleep, blocking the loop), so on 3.12/3.13 it is only in
asyncio.tasks._eager_tasks.  Prints "ready", then a JSON line with the
version, and runs until killed."""

import asyncio
import json
import sys
import time


async def waiter(event):
    await event.wait()


async def hog():
    print("ready", flush=True)
    print(json.dumps({"version": sys.version.split()[0]}), flush=True)
    while True:
        time.sleep(0.001)


async def main():
    asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
    event = asyncio.Event()
    asyncio.create_task(waiter(event), name="eager-waiter")
    asyncio.create_task(hog(), name="eager-hog")


asyncio.run(main())
