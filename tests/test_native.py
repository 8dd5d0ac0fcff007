"""Profiles of native targets: DWARF CFI unwinding, symbolization (inlined
frames, C++ demangling, file:line), labels, mappings, several targets,
binaries hidden in another mount namespace or deleted."""

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from conftest import (
    CHAIN_STACK,
    CPP_STACK,
    assert_progressing,
    assert_stack_prefix,
    build_id,
    source_lines,
    thread_names,
    wait_released,
)

MIN_TOTAL = 150  # samples in 3 s at 100 Hz, all threads (nominally >= 600)
MIN_BUSY = 100  # samples of one thread in 3 s at 100 Hz (nominally 300)


def now_ms():
    return time.time() * 1000


def check_samples(prof, pids, interval, started_ms, ended_ms):
    """Profile-wide checks: types, period, values and labels of every sample."""
    assert prof.data["sample_type"] == [["samples", "count"], ["cpu", "nanoseconds"], ["wall", "nanoseconds"]]
    assert prof.data["default_sample_type"] == "cpu"
    assert prof.data["period_type"] == ["cpu", "nanoseconds"]
    assert prof.data["period"] == interval * 1_000_000
    assert len(prof.samples) >= MIN_TOTAL, f"only {len(prof.samples)} samples: {prof.thread_names()}"
    comms = {}
    for pid in pids:
        comms.update(thread_names(pid))
    for sample in prof.samples:
        labels, num = sample["labels"], sample["num_labels"]
        where = f"sample {labels} {num} {sample['frames'][:3]}"
        count, cpu, wall = sample["values"]
        assert count == 1 and cpu >= 0 and wall > 0, where
        assert cpu == 0 or labels.get("thread.state") in (["running"], ["runnable"]), where
        assert len(num.get("thread.os.id", [])) == 1, where
        tid = num["thread.os.id"][0]
        assert tid in comms, f"thread.os.id {tid} is no thread of {pids} ({comms}): {where}"
        assert labels.get("thread.name") == [comms[tid]], where
        assert num.get("source.event.period") == [interval], where
        assert len(num.get("source.event.time", [])) == 1, where
        assert started_ms - 1000 <= num["source.event.time"][0] <= ended_ms + 1000, where
        assert labels.get("thread.stack.truncated", ["true"]) == ["true"], where


def check_chain(prof, pid):
    """busy-chain's samples show the full chain with file:line (the LINE:
    markers of target_chain.c are the call sites), untruncated."""
    busy_tid = next(tid for tid, comm in thread_names(pid).items() if comm == "busy-chain")
    busy = [s for s in prof.thread("busy-chain") if s["num_labels"]["thread.os.id"] == [busy_tid]]
    assert len(busy) >= MIN_BUSY, f"only {len(busy)} busy-chain samples of pid {pid}: {prof.thread_names()}"
    matched = assert_stack_prefix(busy, CHAIN_STACK, what=f"busy-chain samples of {pid}")

    lines = source_lines("target_chain.c")
    expected = [("profd_testlib.c", None)] + [("target_chain.c", lines[f]) for f in CHAIN_STACK[1:]]

    def located(sample):
        return all(
            frame["file"].endswith(file) and (frame["line"] == line if line else frame["line"] > 0)
            for frame, (file, line) in zip(sample["frames"], expected)
        )

    misplaced = [s for s in matched if not located(s)]
    assert len(misplaced) <= 0.05 * len(matched), (
        f"{len(misplaced)}/{len(matched)} busy-chain stacks lack the expected file:line {expected}; "
        f"e.g. {misplaced[0]['frames'][:5]}"
    )
    truncated = [s for s in matched if "thread.stack.truncated" in s["labels"]]
    assert not truncated, f"{len(truncated)} busy-chain stacks are marked truncated: {truncated[0]['frames']}"


def check_build_ids(prof, *binaries):
    for binary in binaries:
        want = build_id(binary)
        assert prof.mapping_with_build_id(want), (
            f"no mapping with the build id {want} of {binary.name}; mappings: {prof.mappings}"
        )


def check_summary(result, prof, targets, threads):
    summary = result.summary
    assert summary["targets"] == targets, summary
    assert summary["threads"] == threads, summary
    assert summary["samples"] == len(prof.samples), summary
    assert summary["errors"] == 0, summary
    assert 0 <= summary["pause_p50_us"] <= summary["pause_p99_us"], summary


def check_released(*pids):
    for pid in pids:
        wait_released(pid)
        assert_progressing(pid)


def test_chain_unwinds_through_inline_frames_and_shared_library(profd, targets, start_target):
    target = start_target(targets.chain)
    started = now_ms()
    result, prof = profd.profile([target.pid])
    check_samples(prof, [target.pid], 10, started, now_ms())
    check_chain(prof, target.pid)
    check_build_ids(prof, targets.chain, targets.lib)
    check_summary(result, prof, targets=1, threads=2)
    check_released(target.pid)


def test_cpp_names_are_demangled(profd, targets, start_target):
    target = start_target(targets.cpp)
    started = now_ms()
    result, prof = profd.profile([target.pid])
    check_samples(prof, [target.pid], 10, started, now_ms())
    busy = prof.thread("busy-cpp")
    assert len(busy) >= MIN_BUSY, f"only {len(busy)} busy-cpp samples: {prof.thread_names()}"
    matched = assert_stack_prefix(busy, CPP_STACK, what="busy-cpp samples")
    assert all(s["frames"][0]["file"].endswith("target_cpp.cpp") for s in matched), matched[0]["frames"]
    check_build_ids(prof, targets.cpp)
    check_summary(result, prof, targets=1, threads=2)
    check_released(target.pid)


def test_blocked_syscalls_are_not_interrupted(profd, targets, start_target):
    target = start_target(targets.epoll)
    started = now_ms()
    result, prof = profd.profile([target.pid])
    check_samples(prof, [target.pid], 10, started, now_ms())
    check_summary(result, prof, targets=1, threads=4)
    wait_released(target.pid)

    target.proc.stdin.write(b"done\n")
    target.proc.stdin.flush()
    line = target.readline(timeout=5)
    assert line.startswith("eintr="), line
    assert int(line.split("=")[1]) == 0, f"blocked syscalls of the target returned EINTR: {line}"
    assert target.proc.wait(timeout=5) == 0

    def near_leaf(pattern_end, entry):
        def check(sample):
            names = [f["function"] for f in sample["frames"]]
            return any(n.endswith(pattern_end) for n in names[:3]) and entry in names

        return check

    for thread, check, what in [
        ("epoll-wait", near_leaf("epoll_wait", "epoll_thread_main"), "epoll_wait ... epoll_thread_main"),
        ("pipe-read", near_leaf("read", "pipe_thread_main"), "*read ... pipe_thread_main"),
    ]:
        samples = prof.thread(thread)
        assert len(samples) >= MIN_BUSY, f"only {len(samples)} {thread} samples: {prof.thread_names()}"
        good = [s for s in samples if check(s)]
        assert len(good) >= 0.95 * len(samples), (
            f"only {len(good)}/{len(samples)} {thread} samples show {what}; "
            f"e.g. {[f['function'] for f in samples[0]['frames']]}"
        )
    assert_stack_prefix(prof.thread("busy-spin"), ["busy_spin_main"], what="busy-spin samples")


def test_several_pids_in_one_run(profd, targets, start_target):
    chain = start_target(targets.chain)
    cpp = start_target(targets.cpp)
    started = now_ms()
    result, prof = profd.profile([chain.pid, cpp.pid])
    check_samples(prof, [chain.pid, cpp.pid], 10, started, now_ms())
    check_chain(prof, chain.pid)
    busy_cpp = prof.thread("busy-cpp")
    assert len(busy_cpp) >= MIN_BUSY, f"only {len(busy_cpp)} busy-cpp samples: {prof.thread_names()}"
    assert_stack_prefix(busy_cpp, CPP_STACK, what="busy-cpp samples")
    check_build_ids(prof, targets.chain, targets.lib, targets.cpp)
    check_summary(result, prof, targets=2, threads=4)
    check_released(chain.pid, cpp.pid)


def test_interval_from_environment_and_fractional_duration(profd, targets, start_target):
    target = start_target(targets.chain)
    result = profd.run("--pid", target.pid, "--duration", "1.5", env={"SPLUNK_PROFILER_CALL_STACK_INTERVAL": "20"})
    assert result.returncode == 0, str(result)
    prof = profd.read_profile(result.output)
    assert prof.data["period"] == 20_000_000
    busy = prof.thread("busy-chain")
    assert 30 <= len(busy) <= 80, f"{len(busy)} busy-chain samples in 1.5 s at 50 Hz"
    assert all(s["num_labels"].get("source.event.period") == [20] for s in prof.samples)
    check_released(target.pid)


def test_binary_only_visible_in_another_mount_namespace(profd, targets, start_target):
    hidden = f"/srv/profd-hidden-{uuid.uuid4().hex[:8]}"
    assert not os.path.exists(hidden)
    script = (
        f"set -e; mount -t tmpfs profd-test /srv; mkdir {hidden}; "
        f"cp {targets.chain} {targets.lib} {hidden}/; cd /; "
        f"LD_LIBRARY_PATH={hidden} exec {hidden}/target_chain"
    )
    target = start_target(["unshare", "--mount", "--propagation", "private", "sh", "-c", script])
    exe = os.readlink(f"/proc/{target.pid}/exe")
    assert exe == f"{hidden}/target_chain", f"pid {target.pid} runs {exe}"
    assert f"{hidden}/libprofd_testlib.so" in Path(f"/proc/{target.pid}/maps").read_text()
    assert not os.path.exists(hidden), f"{hidden} should exist only in the target's mount namespace"

    started = now_ms()
    result, prof = profd.profile([target.pid])
    check_samples(prof, [target.pid], 10, started, now_ms())
    check_chain(prof, target.pid)
    check_build_ids(prof, targets.chain, targets.lib)
    check_released(target.pid)


def test_deleted_binary(profd, targets, start_target, tmp_path):
    copy = tmp_path / "deleted"
    copy.mkdir()
    for f in (targets.chain, targets.lib):
        shutil.copy2(f, copy)
    target = start_target(copy / "target_chain", env=dict(os.environ, LD_LIBRARY_PATH=str(copy)))
    maps = Path(f"/proc/{target.pid}/maps").read_text()
    assert str(copy / "libprofd_testlib.so") in maps, maps
    shutil.rmtree(copy)
    maps = Path(f"/proc/{target.pid}/maps").read_text()
    assert f"{copy}/target_chain (deleted)" in maps, maps
    assert f"{copy}/libprofd_testlib.so (deleted)" in maps, maps

    started = now_ms()
    result, prof = profd.profile([target.pid])
    check_samples(prof, [target.pid], 10, started, now_ms())
    check_chain(prof, target.pid)
    check_build_ids(prof, targets.chain, targets.lib)
    check_released(target.pid)


def test_targets_have_debug_info_and_no_frame_pointers(targets):
    """Guards the point of the targets: the profiler must unwind them with
    DWARF CFI, so they must be built -fomit-frame-pointer (chain_b does
    not push %rbp) and carry DWARF."""
    for binary in (targets.chain, targets.lib, targets.cpp, targets.epoll):
        sections = subprocess.run(["readelf", "-S", str(binary)], capture_output=True, text=True).stdout
        assert ".debug_info" in sections and ".eh_frame" in sections, binary
    disassembly = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "--disassemble=chain_b", str(targets.chain)],
        capture_output=True, text=True,
    ).stdout
    assert "chain_b" in disassembly and "push   %rbp" not in disassembly, disassembly
