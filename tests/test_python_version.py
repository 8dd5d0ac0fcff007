"""The CPython version comes from the interpreter binary's own data, not
from its file name: a 3.9 interpreter (no Py_Version symbol, no debug
offsets) copied by `python3 -m venv --copies` runs as .../bin/python3 or
.../bin/python, and must still get Python frames
(tests/python_targets/blockers.py, dumped once).  A minor splunk-profd has
no entry for gets one warning that names it."""

import json
import re
import shutil
import struct
import subprocess

import pytest

from conftest import PYTHON_ENV, PYTHON_TARGETS, Target, python_source_lines

BLOCKERS = PYTHON_TARGETS / "blockers.py"
LINES = python_source_lines(BLOCKERS)


@pytest.fixture(scope="module")
def venv_39(pythons):
    """A `venv --copies` of the 3.9 chroot's interpreter, inside the chroot;
    yields (interpreter, directory as the chroot sees it)."""
    interpreter = pythons["3.9-bullseye"]
    seen = interpreter.install([BLOCKERS])
    done = subprocess.run(
        ["/usr/sbin/chroot", str(interpreter.root), "python3", "-m", "venv", "--copies", "--without-pip",
         str(seen / "venv")],
        capture_output=True, text=True, env=PYTHON_ENV, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    yield interpreter, seen
    shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)


@pytest.mark.parametrize("name", ["python3", "python"])
def test_39_copy_without_version_in_its_name(venv_39, name, profd):
    interpreter, seen = venv_39
    binary = seen / "venv" / "bin" / name
    assert not interpreter.host_path(binary).is_symlink()
    target = Target(["/usr/sbin/chroot", str(interpreter.root), str(binary), str(seen / BLOCKERS.name), "now"],
                    env=PYTHON_ENV, cwd="/")
    try:
        target.wait_ready(timeout=30)
        info = json.loads(target.readline(timeout=10))
        assert info["version"].startswith("3.9."), info["version"]
        result = profd.run("dump", "--pid", target.pid, "-v", output=None)
        assert result.returncode == 0, str(result)
        assert "unknown version" not in result.stderr, str(result)
        version = info["version"].split()[0]
        assert re.search(rf"CPython {re.escape(version)}\b", result.stderr), str(result)
        for function, marker in (("on_event", "event_wait"), ("sleep_long", "sleep_long"), ("main", "main_read")):
            frame = f"{function} ({seen / BLOCKERS.name}:{LINES[marker]})"
            assert frame in result.stdout, f"no {frame} in the dump:\n{result.stdout}"
    finally:
        target.kill()


def patch_debug_version(path, version_hex):
    """Rewrites the version word of the _Py_DebugOffsets at the start of
    the .PyRuntime section of the binary at path (a copy)."""
    sections = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True,
                              check=True).stdout
    line = next(l for l in sections.splitlines() if " .PyRuntime " in l)
    offset = int(line.split("]", 1)[1].split()[3], 16)
    with open(path, "r+b") as f:
        f.seek(offset)
        assert f.read(8) == b"xdebugpy", path
        f.write(struct.pack("<Q", version_hex))


def test_unknown_minor_warns_once(pythons, profd):
    """3.15's interpreter with its debug offsets saying 3.16.0, started by
    `record -- COMMAND`: the exec'd target is looked at again and again
    while its runtime may still be coming up (three warnings per 3 s run
    before), but the user is told once, with the version, and gets
    native stacks."""
    interpreter = pythons["3.15-forky"]
    seen = interpreter.install([interpreter.host_path("/usr/bin/python3.15")])
    binary = seen / "python3.15"
    patch_debug_version(interpreter.host_path(binary), 0x031000F0)
    try:
        result = profd.run("record", "--duration", 2, "--", "/usr/sbin/chroot", interpreter.root,
                           binary, "-c", "import time; time.sleep(3)", timeout=30)
        assert result.returncode == 0, str(result)
        warned = [l for l in result.stderr.splitlines() if "CPython 3.16" in l]
        assert len(warned) == 1, str(result)
        assert "CPython 3.16.0:" in warned[0] and "warning" in warned[0], warned
        assert "3.9 to 3.15" in warned[0], warned
        assert "native stacks only" in warned[0], warned
    finally:
        shutil.rmtree(interpreter.host_path(seen), ignore_errors=True)
