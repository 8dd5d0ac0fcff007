"""The layout's rule (README.md, "Layout"): includes point one way, up the
folder table, and no two files or objects include each other.  The checker
itself is tested on a small tree made here, so that it is known to fail."""

import subprocess
import sys

from conftest import REPO

CHECK = REPO / "scripts" / "check-includes.py"


def run_check(top):
    return subprocess.run([sys.executable, str(CHECK), str(top)], capture_output=True, text=True)


def make_tree(tmp_path, files):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    return tmp_path


def test_the_repository_keeps_the_rule():
    result = run_check(REPO)
    assert result.returncode == 0, result.stdout


def test_an_include_against_the_direction_fails(tmp_path):
    top = make_tree(tmp_path, {"util/a.h": '#include "engine/b.h"\n', "engine/b.h": "\n"})
    result = run_check(top)
    assert result.returncode == 1
    assert "util/a.h: includes engine/b.h: util/ may not include engine/" in result.stdout


def test_a_cycle_between_objects_fails(tmp_path):
    top = make_tree(tmp_path, {
        "engine/a.c": '#include "engine/b.h"\n', "engine/a.h": "\n",
        "engine/b.c": '#include "engine/a.h"\n', "engine/b.h": "\n",
        "engine/c.h": '#include "engine/c_internal.h"\n', "engine/c_internal.h": '#include "engine/c.h"\n',
    })
    result = run_check(top)
    assert result.returncode == 1
    assert "include cycle: engine/a -> engine/b -> engine/a" in result.stdout
    assert "engine/c" not in result.stdout  # an object and its private header are one


def test_a_downward_include_passes(tmp_path):
    top = make_tree(tmp_path, {"cli/m.c": '#include "engine/e.h"\n#include "util/u.h"\n',
                               "engine/e.h": '#include "util/u.h"\n', "util/u.h": "\n"})
    assert run_check(top).returncode == 0
