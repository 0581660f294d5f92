"""The persistent compile cache: a later process loads what an earlier one compiled.

Each process below is a fresh interpreter with its own HLODSL_CACHE_DIR.
"""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import hlodsl as hd
from hlodsl import runtime
from hlodsl.runtime import disk_cache

pytestmark = pytest.mark.compat  # jax/jaxlib-release sensitive paths (.ci/compat)

PROGRAM = r"""
import json, sys, time, numpy as np, hlodsl as hd
from hlodsl import runtime
from hlodsl.runtime import disk_cache
f = hd.compile(lambda a, b: hd.stdlib.tanh(a @ b).sum(axis=0))
a = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
out = np.asarray(f(a, a.T))
print(json.dumps({"out": out.tolist(), "compiles": runtime.stats["compiles"],
                  "loads": runtime.stats.get("cache_loads", 0), "stats": disk_cache.stats}))
"""


def _run(cache_dir, program=PROGRAM, **env):
    e = dict(os.environ, HLODSL_CACHE_DIR=str(cache_dir), **env)
    out = subprocess.run([sys.executable, "-c", program], env=e, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_a_second_process_loads_instead_of_compiling(tmp_path):
    first, _ = _run(tmp_path)
    second, _ = _run(tmp_path)
    assert first["compiles"] >= 1 and first["loads"] == 0
    assert second["compiles"] == 0 and second["loads"] == first["compiles"]
    assert second["out"] == first["out"]
    assert len(list(tmp_path.glob("*.xla"))) == first["compiles"]


def test_an_empty_cache_dir_switches_it_off(tmp_path):
    result, _ = _run("")
    assert result["stats"]["writes"] == 0 and result["loads"] == 0


def test_a_corrupt_entry_is_ignored_with_a_warning_and_replaced(tmp_path):
    _run(tmp_path)
    for p in tmp_path.glob("*.xla"):
        p.write_bytes(p.read_bytes()[:100] + b"garbage")
    result, err = _run(tmp_path, PROGRAM.replace("import json", "import warnings; "
                                                 "warnings.simplefilter('always'); import json"))
    assert result["loads"] == 0 and result["compiles"] >= 1
    assert "is corrupt" in err
    third, _ = _run(tmp_path)
    assert third["compiles"] == 0 and third["out"] == result["out"]


def test_the_directory_is_bounded_least_recently_used_first(tmp_path, monkeypatch):
    monkeypatch.setenv("HLODSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hd.config, "persistent_cache_bytes", 3 * 1024)
    for i in range(6):
        disk_cache.store(f"entry{i}", bytes(1000))
        os.utime(tmp_path / f"entry{i}.xla", (i, i))  # older first
    names = sorted(p.stem for p in tmp_path.glob("*.xla"))
    assert names == ["entry4", "entry5"] or names == ["entry3", "entry4", "entry5"][-len(names):]
    assert sum(p.stat().st_size for p in tmp_path.glob("*.xla")) <= 3 * 1024
    assert disk_cache.load("entry5") == bytes(1000)


def test_a_directory_others_can_write_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    monkeypatch.setenv("HLODSL_CACHE_DIR", str(shared))
    with pytest.warns(disk_cache.CacheWarning, match="writable by others"):
        disk_cache.store("x", b"data")
    assert not list(shared.glob("*.xla"))


def test_in_process_compiles_use_and_fill_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HLODSL_CACHE_DIR", str(tmp_path))
    def h(x):
        return x * 3 + 1

    f = hd.compile(h)
    x = hd.array(np.float32([1, 2]))
    before = dict(disk_cache.stats)
    np.testing.assert_array_equal(np.asarray(f(x)), [4, 7])
    assert disk_cache.stats["writes"] == before["writes"] + 1
    g = hd.compile(h, cache_size=5)  # the same module, compiled by another Compiled
    loads = runtime.stats.get("cache_loads", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(np.asarray(g(x)), [4, 7])
    assert runtime.stats.get("cache_loads", 0) == loads + 1
    assert Path(disk_cache.directory()) == tmp_path
