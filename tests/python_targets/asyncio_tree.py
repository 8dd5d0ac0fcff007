"""An event loop with named tasks waiting on each other (tests/test_asyncio_dump.py).

"main" gathers "child-a" and "child-b"; both wait in leaf_wait on an
asyncio.Event, child-a through one more coroutine (middle); "sleeper"
waits in asyncio.sleep; "spinner" runs (argument "spin": it spins in
spin_step, yielding every 2 ms; else it waits on the Event too).  A
finished task ("finished") stays referenced.  A second thread ("loop2")
runs its own loop, whose task "remote" sleeps.  Prints "ready", then a
JSON line with the version, and runs until killed."""

import asyncio
import json
import sys
import threading
import time


async def leaf_wait(event):
    await event.wait()


async def middle(event):
    await leaf_wait(event)


async def child_a(event):
    await middle(event)


async def child_b(event):
    await leaf_wait(event)


async def sleeper():
    await asyncio.sleep(3600)


async def spin_step():
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass


async def spinner(event, spin):
    while spin:
        await spin_step()
        await asyncio.sleep(0)
    await leaf_wait(event)


async def finished():
    return 1


async def main_task(event):
    await asyncio.gather(
        asyncio.create_task(child_a(event), name="child-a"),
        asyncio.create_task(child_b(event), name="child-b"),
    )


REMOTE_STARTED = threading.Event()


async def remote():
    REMOTE_STARTED.set()
    await asyncio.sleep(3600)


async def other_main():
    await asyncio.create_task(remote(), name="remote")


async def main():
    threading.Thread(target=asyncio.run, args=(other_main(),), name="loop2", daemon=True).start()
    event = asyncio.Event()
    done = asyncio.create_task(finished(), name="finished")
    await done
    tasks = [
        asyncio.create_task(main_task(event), name="main"),
        asyncio.create_task(sleeper(), name="sleeper"),
        asyncio.create_task(spinner(event, sys.argv[1:] == ["spin"]), name="spinner"),
    ]
    await asyncio.sleep(0.05)
    while not REMOTE_STARTED.is_set():  # loop2's task exists (a loaded host starts it late)
        await asyncio.sleep(0.01)
    print("ready", flush=True)
    print(json.dumps({"version": sys.version.split()[0]}), flush=True)
    await asyncio.gather(*tasks)


asyncio.run(main())
