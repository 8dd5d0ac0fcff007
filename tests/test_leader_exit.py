"""A process whose main thread has called pthread_exit (issue #20 item 5):
its leader is a zombie, with no maps and no readable memory, while the
process lives on.  Its threads are profiled and symbolized anyway, through
a live thread's /proc entry, whether the leader exited before the attach
or during the run."""
import time

from conftest import TARGET_DIR, proc_status

TARGET = TARGET_DIR / "target_leader_exit"


def burn_share(prof):
    samples = prof.thread("burner")
    assert samples, prof.thread_names()
    hits = [s for s in samples if any(f["function"] == "leader_exit_burn" for f in s["frames"])]
    return len(hits) / len(samples)


def wait_zombie_leader(pid, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc_status(pid).get("State", "").startswith("Z"):
            return
        time.sleep(0.02)
    raise AssertionError(f"leader of {pid} did not exit")


def test_leader_exited_before_attach(profd, start_target):
    target = start_target([TARGET, "now"])
    wait_zombie_leader(target.pid)
    result, prof = profd.profile([target.pid], duration=2, extra=("--wall",))
    assert target.alive()
    assert burn_share(prof) >= 0.9, prof.thread_names()
    assert not any(s["labels"].get("thread.name") == ["target_leader_e"] for s in prof.samples)
    dump = profd.run("dump", "--pid", target.pid, output=None)
    assert dump.returncode == 0, str(dump)
    assert "leader_exit_burn" in dump.stdout, dump.stdout


def test_leader_exits_during_the_run(profd, start_target):
    target = start_target([TARGET])
    proc = profd.start("--pid", target.pid, "--duration", 3, "--interval", 10, "--wall")
    time.sleep(1.0)
    target.proc.stdin.write(b"exit\n")
    target.proc.stdin.flush()
    wait_zombie_leader(target.pid)
    result = profd.finish(proc)
    assert result.returncode == 0, str(result)
    prof = profd.read_profile(result.output)
    assert burn_share(prof) >= 0.9, prof.thread_names()
    assert target.alive()
