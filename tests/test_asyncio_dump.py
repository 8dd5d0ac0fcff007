"""dump lists every asyncio task (issue #18 item 4).

No mocks: a real CPython (tests/conftest.py PYTHONS) runs
tests/python_targets/asyncio_tree.py, an event loop whose named tasks wait
on each other (a gather of two children waiting on an asyncio.Event, one
through a middle coroutine), one sleeps, one runs ("spinner") and one has
finished.  One dump, text and --json, must list each task with its name,
its state, the coroutine functions of its await chain (innermost first),
the thread of its loop and who awaits it (python/py_asyncio_tasks.c);
the text indents each task under the one awaiting it.  A second thread's
loop gets its own section."""

import json
import re

import pytest

from test_asyncio import running
from conftest import PYTHON_NAMES, PYTHON_TARGETS

TREE = PYTHON_TARGETS / "asyncio_tree.py"

# task name: the coroutine functions its chain ends with, innermost first
# (after the asyncio frame it waits in, Event.wait or sleep)
CHAINS = {
    "child-a": ["leaf_wait", "middle", "child_a"],
    "child-b": ["leaf_wait", "child_b"],
    "sleeper": ["sleeper"],
    "main": ["main_task"],
}


def base(function):
    return function.rsplit(".", 1)[-1]


def check_json(tasks, pid, minor):
    by_name = {t["name"]: t for t in tasks}
    for name, chain in CHAINS.items():
        task = by_name.get(name)
        assert task, f"task {name} not listed: {tasks}"
        assert task["state"] == "pending", task
        assert task["thread"] == pid, task
        functions = [f["function"] for f in task["frames"]]
        assert functions[-len(chain):] == chain, task
        assert all(f["file"].endswith(".py") and f["line"] for f in task["frames"]), task
    assert base(by_name["child-a"]["frames"][0]["function"]) == "wait", by_name["child-a"]
    assert base(by_name["sleeper"]["frames"][0]["function"]) == "sleep", by_name["sleeper"]
    # the running task: its chain starts at its coroutine, whatever it awaits now
    spinner = by_name.get("spinner")
    assert spinner and spinner["state"] == "pending", tasks
    assert "spinner" in [f["function"] for f in spinner["frames"]], spinner
    # who awaits whom: the gather's children by main, main by the loop's main()
    main = by_name["main"]
    assert by_name["child-a"]["awaited_by"] == [main["id"]], tasks
    assert by_name["child-b"]["awaited_by"] == [main["id"]], tasks
    outer = [t for t in tasks if t["frames"] and t["frames"][-1]["function"] == "main"]
    assert outer and main["awaited_by"] == [outer[0]["id"]], tasks
    # 3.14+ unlinks a task from its list when it finishes
    if minor < 14:
        assert by_name["finished"]["state"] == "done" and by_name["finished"]["frames"] == [], tasks
    else:
        assert "finished" not in by_name or by_name["finished"]["state"] == "done", tasks


@pytest.mark.parametrize("name", PYTHON_NAMES)
def test_dump_lists_every_task(name, pythons, profd):
    interpreter = pythons[name]
    with running(interpreter, TREE, "spin") as target:
        # spinner yields every 2 ms: a dump between two of its steps sees no
        # running task, so a few are allowed
        for _ in range(5):
            js = profd.run("dump", "--pid", target.pid, "--json", output=None)
            assert js.returncode == 0, js
            processes = json.loads(js.stdout)["processes"]
            if [t["name"] for t in processes[0]["tasks"] if t["running"]] == ["spinner"]:
                break
        else:
            pytest.fail(f"spinner not running in 5 dumps: {processes[0]['tasks']}")
        text = profd.run("dump", "--pid", target.pid, output=None)
    check_json(processes[0]["tasks"], target.pid, interpreter.minor[1])
    # the other thread's loop: its task has that thread
    loop2 = [t["tid"] for t in processes[0]["threads"] if t["python_name"] == "loop2"]
    remote = [t for t in processes[0]["tasks"] if t["name"] == "remote"]
    assert loop2 and remote and remote[0]["thread"] == loop2[0], processes[0]
    assert [base(f["function"]) for f in remote[0]["frames"]] == ["sleep", "remote"], remote
    assert text.returncode == 0, text
    section = text.stdout.split(f"Tasks of the loop on thread {target.pid}:\n", 1)
    assert len(section) == 2, text.stdout
    lines = section[1]
    for task, chain in CHAINS.items():
        joined = " <- ".join(rf"{c} \([^)]*:\d+\)" for c in chain)
        pattern = rf'^ +"{task}" pending  (.* <- )?{joined}'
        assert re.search(pattern, lines, re.M), (pattern, lines)
    assert re.search(r'^ +"child-a" pending  .* <- middle \(.* <- child_a \(.*  awaited_by="main"$', lines, re.M), lines
    assert re.search(r'^ +"spinner" pending( \(running\))?  .*\bspinner \(', lines, re.M), lines
    assert "(running)" not in lines.replace('"spinner" pending (running)', ""), lines
    # the await tree: main() first, the gather's children two levels under it
    assert re.search(r'^    "Task-\d+" pending  main \(', lines, re.M), lines
    assert re.search(r'^        "child-b" pending ', lines, re.M), lines
    assert re.search(rf'^Tasks of the loop on thread {loop2[0]}:\n +"Task-\d+" pending .*\n +"remote" pending  sleep ', text.stdout, re.M), text.stdout


EAGER = PYTHON_TARGETS / "asyncio_eager.py"


@pytest.mark.parametrize("name", ["3.13-trixie", "3.14-forky", "3.15-forky"])
def test_dump_lists_eager_tasks(name, pythons, profd):
    """An eager task still in its first step is listed (3.13: it is only in
    _eager_tasks; its name is set once that step ends, so it is Task-N)."""
    with running(pythons[name], EAGER) as target:
        js = profd.run("dump", "--pid", target.pid, "--json", output=None)
    assert js.returncode == 0, js
    tasks = json.loads(js.stdout)["processes"][0]["tasks"]
    chains = {t["name"]: [base(f["function"]) for f in t["frames"]] for t in tasks}
    assert chains.get("eager-waiter") == ["wait", "waiter"], tasks
    assert ["hog"] in chains.values(), tasks
