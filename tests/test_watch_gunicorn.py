"""Daemon mode on a real pre-fork server (issue 6): gunicorn from PyPI,
3 sync workers, a small WSGI app doing CPU work per request, under load
from loopback client threads.

gunicorn starts (labelled with SPLUNK_PROFILER_ENABLED=true) after the
daemon.  Then two workers are forked by an already-profiled master: one
added with SIGTTIN, and the replacement gunicorn forks for a worker killed
with SIGKILL.  Every worker must be profiled with its own process.pid, in
the --output profile and as its own OTLP resource; after the daemon stops,
every gunicorn process is untraced, running and serving, and gunicorn
shuts down cleanly."""

import collections
import http.client
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import proc_status  # noqa: E402
from otlp_receiver import Receiver, free_port  # noqa: E402
from test_watch import Watch, no_thread_traced_or_stopped, pids_in, traced_by, wait_for  # noqa: E402



@pytest.fixture(scope="module", autouse=True)
def gunicorn_installed():
    try:
        import gunicorn  # noqa: F401
    except ImportError:
        pytest.fail(f"gunicorn is not installed for {sys.executable}: run scripts/setup.sh "
                    f"(or `{sys.executable} -m pip install gunicorn`)", pytrace=False)

APP = textwrap.dedent("""
    import json

    def work(n):
        total = 0
        for i in range(n):
            total += (i * 7919) % 1009
        return total

    def app(environ, start_response):
        body = json.dumps({"total": work(20000)}).encode()
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(body)))])
        return [body]
""")


def children_of(pid):
    """pids whose parent is pid."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            status = proc_status(entry.name)
            if status and int(status["PPid"]) == pid:
                kids.append(int(entry.name))
    return set(kids)


class Load:
    """Client threads sending GET / over loopback (new connection each,
    as gunicorn's sync workers close after every response)."""

    def __init__(self, port, threads=4):
        self.port, self.stop, self.ok, self.errors = port, threading.Event(), 0, 0
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]

    def request(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/")
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    def run(self):
        while not self.stop.is_set():
            try:
                good = self.request() == 200
            except (OSError, http.client.HTTPException):
                good = False
                time.sleep(0.05)
            with self.lock:
                self.ok += good
                self.errors += not good

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)


@pytest.fixture
def watch(tmp_path, read_profile):
    w = Watch(tmp_path, read_profile)
    yield w
    w.cleanup()


def test_gunicorn_workers_profiled_each_with_its_own_pid(watch, tmp_path):
    (tmp_path / "profd_h6_app.py").write_text(APP)
    port = free_port()
    with Receiver() as receiver:
        daemon = watch.start_daemon("--endpoint", receiver.endpoint, interval=20)
        log = open(tmp_path / "gunicorn.log", "w+")
        master = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--chdir", str(tmp_path), "-w", "3", "-k", "sync",
             "-b", f"127.0.0.1:{port}", "--timeout", "60", "--graceful-timeout", "10",
             "profd_h6_app:app"],
            env=watch.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        watch.procs.append(master)
        try:
            run_gunicorn(watch, daemon, master, port, receiver, log)
        finally:
            if master.poll() is None:
                os.killpg(master.pid, signal.SIGKILL)  # the workers too
            master.wait(timeout=30)
            log.close()


def run_gunicorn(watch, daemon, master, port, receiver, log):
    def gunicorn_log():
        log.seek(0)
        return log.read()[-3000:]

    wait_for(lambda: len(children_of(master.pid)) == 3, 20, "3 gunicorn workers")
    first = children_of(master.pid)
    wait_for(lambda: all(traced_by(p, daemon) for p in {master.pid, *first}), 5,
             "master and workers traced")
    with Load(port) as load:
        wait_for(lambda: load.ok >= 20, 20, "the first responses")
        time.sleep(2.0)
        # A worker forked by a profiled master: SIGTTIN adds one.
        master.send_signal(signal.SIGTTIN)
        wait_for(lambda: len(children_of(master.pid)) == 4, 20, "a 4th worker")
        (added,) = children_of(master.pid) - first
        wait_for(lambda: traced_by(added, daemon), 2, f"the added worker {added} traced")
        # Kill one of the first workers: gunicorn forks its replacement.
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: victim not in children_of(master.pid) and len(children_of(master.pid)) == 4,
                 20, "the replacement worker")
        (replacement,) = children_of(master.pid) - first - {added}
        wait_for(lambda: traced_by(replacement, daemon), 2, f"the replacement {replacement} traced")
        time.sleep(3.0)
        served_under_profiling = load.ok
    workers = children_of(master.pid)
    assert workers == (first - {victim}) | {added, replacement}
    assert served_under_profiling > 50 and load.errors < served_under_profiling * 0.05, (
        served_under_profiling, load.errors, gunicorn_log())
    for pid in (added, replacement):  # followed through the fork, not found later
        assert f"following PID {pid}, forked by PID {master.pid}" in watch.log(), watch.log()[-3000:]

    # Every worker (and the master) is its own OTLP resource...
    expected = {master.pid, victim, *workers}
    records = receiver.wait_records(
        lambda rs: expected <= {r.get("process.pid") for r, _, _ in rs}, timeout=10)
    exported = {r.get("process.pid") for r, _, _ in records}
    assert expected <= exported, (sorted(expected - exported), sorted(exported))
    for resource, _, _ in records:
        if resource.get("process.pid") in workers:
            assert resource["process.executable.name"].startswith("python"), resource
            assert resource.get("process.runtime.name") == "cpython", resource

    # ... and carries its own process.pid in the profile, with the app's frames.
    profile = watch.stop()
    assert expected <= pids_in(profile), (sorted(expected - pids_in(profile)), watch.log()[-3000:])
    in_app = {int(s["num_labels"]["process.pid"][0]) for s in profile.samples
              if any(f["function"] == "work" for f in s["frames"])}
    per_pid = collections.Counter(int(s["num_labels"]["process.pid"][0]) for s in profile.samples
                                  if "process.pid" in s.get("num_labels", {}))
    print(f"\ngunicorn: master {master.pid}, first workers {sorted(first)}, killed {victim}, "
          f"added {added}, replacement {replacement}; requests {served_under_profiling} "
          f"({load.errors} errors); samples per pid {dict(per_pid)}; pids with app frames {sorted(in_app)}")
    assert workers <= in_app, (sorted(in_app), sorted(workers))  # each served requests

    # Released, running and still serving after the daemon is gone.
    for pid in {master.pid, *workers}:
        assert no_thread_traced_or_stopped(pid), pid
        assert proc_status(pid)["State"][0] in "RS", proc_status(pid)["State"]
    assert Load(port).request() == 200
    # gunicorn shuts down cleanly: SIGTERM to the master, exit 0, workers gone.
    master.send_signal(signal.SIGTERM)
    assert master.wait(timeout=30) == 0, gunicorn_log()
    wait_for(lambda: all(proc_status(p) is None for p in workers), 10, "the workers gone")
