"""hd.save / hd.load: structures of arrays on disk, refused when they do not match (issue 30)."""

import os
from typing import NamedTuple

import attrs
import numpy as np
import pytest

import hlodsl as hd
from hlodsl.interchange import checkpoint
from platform_rules import needs_devices


@attrs.frozen
class Layer:
    W: object
    b: object
    act: str = "relu"


class Pair(NamedTuple):
    first: object
    second: object


def _tree():
    rng = np.random.default_rng(0)
    return {
        "layers": [Layer(hd.array(rng.normal(size=(3, 4)).astype(np.float32)),
                         hd.array(np.zeros(3, np.float32))),
                   Layer(hd.array(rng.normal(size=(2, 3)).astype("bfloat16")),
                         hd.array(np.float64(-0.0)), act="tanh")],
        "opt": {"step": hd.array(np.int32(7)), "mask": hd.array(np.array([True, False])),
                "z": hd.array(np.array([1 + 2j, np.nan], np.complex64))},
        "narrow": Pair(hd.array(np.array([0.5, -448], "float8_e4m3fn")),
                       hd.array(np.array([[-8, 7]], "int4"))),
        "empty": (hd.array(np.zeros((0, 3), np.float32)), 4, None),
    }


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _zeros_like(tree):
    return hd.tree_map(lambda x: hd.array(np.zeros(x.shape, x.dtype.np_dtype)), tree)


def test_round_trip_keeps_structure_values_and_element_types(tmp_path):
    tree = _tree()
    path = tmp_path / "ckpt.npz"
    hd.save(path, tree)
    like = _zeros_like(tree)
    like["empty"] = (like["empty"][0], 5, "static from like")
    got = hd.load(path, like=like)
    assert isinstance(got["layers"][1], Layer) and got["layers"][1].act == "tanh"
    assert isinstance(got["narrow"], Pair)
    assert got["empty"][1:] == (4, None)  # values that are not arrays are saved too (issue 40)
    leaves, want = hd.tree_leaves(got), hd.tree_leaves(tree)
    assert len(leaves) == len(want) == 10
    for g, w in zip(leaves, want):
        assert g.type == w.type
        assert _same_bits(g, w)


def test_without_like_the_arrays_come_back_by_path(tmp_path):
    hd.save(tmp_path / "c.npz", {"w": [hd.array([1.0, 2.0])], "b": hd.array(np.int8(3))})
    got = hd.load(tmp_path / "c.npz")
    assert list(got) == ["tree['w'][0]", "tree['b']"]
    assert _same_bits(got["tree['b']"], np.int8(3))


def test_the_file_is_an_npz_numpy_reads_at_exactly_the_path_given(tmp_path):
    path = tmp_path / "weights.ckpt"
    hd.save(str(path), {"w": hd.array(np.float32([1, 2]))})
    assert os.listdir(tmp_path) == ["weights.ckpt"]  # nothing appended, no temporary left
    with np.load(path) as data:
        np.testing.assert_array_equal(data["tree['w']"], np.float32([1, 2]))


@needs_devices(4)
def test_a_sharded_array_is_gathered_and_loaded_back_with_its_sharding(tmp_path):
    mesh = hd.make_mesh((4,), ("x",))
    sharding = hd.NamedSharding(mesh, hd.P("x"))
    x = hd.device_put(np.arange(16, dtype=np.float32).reshape(8, 2), sharding)
    hd.save(tmp_path / "s.npz", {"x": x})
    with np.load(tmp_path / "s.npz") as data:
        np.testing.assert_array_equal(data["tree['x']"], np.arange(16).reshape(8, 2))
    got = hd.load(tmp_path / "s.npz", like={"x": x})["x"]
    assert got.sharding == sharding
    assert len(got.addressable_shards) == 4
    np.testing.assert_array_equal(np.asarray(got), np.asarray(x))


@pytest.mark.parametrize("change, message", [
    (lambda t: t["layers"].append(t["layers"][0]),
     (r"has no tree\['layers'\]\[2\]\.W, tree\['layers'\]\[2\]\.b, "
      r"tree\['layers'\]\[2\]\.act; like= must have the structure")),
    (lambda t: t.pop("opt"),
     (r"holds tree\['opt'\]\['step'\], tree\['opt'\]\['mask'\], tree\['opt'\]\['z'\], which "
     r"like= does not have")),
    (lambda t: t["opt"].update(lr=t["opt"].pop("step")),
     r"has no tree\['opt'\]\['lr'\] and holds tree\['opt'\]\['step'\], which like= does not"),
    (lambda t: t.update(opt={**t["opt"], "step": hd.array(np.int32([7, 8]))}),
     (r"load: tree\['opt'\]\['step'\] has shape \(\) in the checkpoint .*, but like's has "
     r"shape \(2,\)")),
    (lambda t: t["layers"].__setitem__(1, Layer(hd.array(np.zeros((2, 3), np.float32)),
                                                t["layers"][1].b)),
     (r"load: tree\['layers'\]\[1\]\.W is bfloat16 in the checkpoint .*, but like's is "
     r"float32")),
    (lambda t: t.update(narrow=Pair(t["narrow"].first, 3)),
     r"like= has a value at tree\['narrow'\]\.second, but the checkpoint .* holds an array"),
])
def test_a_mismatched_like_is_refused_naming_the_path(tmp_path, change, message):
    tree = _tree()
    hd.save(tmp_path / "c.npz", tree)
    like = _zeros_like(tree)
    change(like)
    with pytest.raises(ValueError, match=message):
        hd.load(tmp_path / "c.npz", like=like)


def test_a_file_that_is_not_a_checkpoint_is_refused(tmp_path):
    np.savez(tmp_path / "plain.npz", w=np.zeros(2))
    with pytest.raises(ValueError, match="is not an hlodsl checkpoint"):
        hd.load(tmp_path / "plain.npz", like={"w": hd.array(np.zeros(2))})


def test_a_failed_save_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch):
    path = tmp_path / "c.npz"
    hd.save(path, {"w": hd.array([1.0])})
    before = path.read_bytes()
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # after the metadata, while writing the first array
            raise OSError("disk full")
        return write_array(*args, **kwargs)

    write_array = np.lib.format.write_array
    monkeypatch.setattr(np.lib.format, "write_array", failing)
    with pytest.raises(OSError, match="disk full"):
        hd.save(path, {"w": hd.array([2.0]), "b": hd.array([3.0])})
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.npz"]  # the temporary file is gone


def test_saving_a_symbolic_array_is_a_staging_error(tmp_path):
    f = hd.compile(lambda x: hd.save(tmp_path / "c.npz", {"x": x}) or x)
    with pytest.raises(hd.StagingError, match=r"save \(tree\['x'\]\)"):
        f(hd.array([1.0]))
    assert not os.listdir(tmp_path)


def test_the_checkpoint_format_is_described_in_its_own_entry(tmp_path):
    hd.save(tmp_path / "c.npz", [hd.array(np.zeros((2, 1), "bfloat16"))])
    with np.load(tmp_path / "c.npz") as data:
        import json

        meta = json.loads(data[checkpoint.META].tobytes())
        assert data["tree[0]"].dtype == np.uint8  # bfloat16 as its raw bytes
    assert meta == {"format": 1, "arrays": [{"path": "tree[0]", "dtype": "bfloat16",
                                             "shape": [2, 1]}]}


# -- values that are not arrays, damaged files, saves that die (issue 40) -------------------

VALUES = {"step": 7, "lr": 1.5, "nan": float("nan"), "neg0": -0.0, "big": 2 ** 80, "name": "run1",
          "none": None, "c": 1 + 2j, "flag": True, "f32": np.float32(2.5),
          "bf16": np.array(1.5, "bfloat16")[()], "npbool": np.bool_(True), "i8": np.int8(-3)}


def _same_value(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex() if a == a else b != b
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a == b


def test_the_issues_step_and_lr_are_saved_not_taken_from_like(tmp_path):
    w = hd.array(np.float32([1, 2]))
    hd.save(tmp_path / "c.npz", {"step": 7, "lr": 1.5, "w": w})
    got = hd.load(tmp_path / "c.npz", like={"step": 0, "lr": 0.0, "w": w})
    assert (got["step"], got["lr"]) == (7, 1.5)


@pytest.mark.parametrize("with_like", [True, False])
def test_numbers_numpy_scalars_strings_and_none_round_trip_exactly(tmp_path, with_like):
    tree = {**VALUES, "w": hd.array(np.float32([1, 2])), "nested": [("a", 3), {"k": None}]}
    hd.save(tmp_path / "c.npz", tree)
    if with_like:
        like = {**{k: 0 for k in VALUES}, "w": tree["w"], "nested": [("", 0), {"k": 0}]}
        got = hd.load(tmp_path / "c.npz", like=like)
        assert got["nested"] == [("a", 3), {"k": None}]
        values = {k: got[k] for k in VALUES}
    else:
        got = hd.load(tmp_path / "c.npz")
        values = {k: got[f"tree[{k!r}]"] for k in VALUES}
        assert got["tree['nested'][0][0]"] == "a"
    for k, v in VALUES.items():
        assert _same_value(values[k], v), (k, values[k], v)


@pytest.mark.parametrize("value, what", [
    (lambda x: x, "a function"), (object(), "a object"), (b"raw", "a bytes"),
    (frozenset({1}), "a frozenset"), (np.str_("s"), "a numpy.str_"),
])
def test_a_value_a_checkpoint_cannot_hold_is_refused_by_path_before_writing(tmp_path, value,
                                                                          what):
    with pytest.raises(hd.CheckpointError, match=rf"save: tree\['opt'\]\[1\] is {what}"):
        hd.save(tmp_path / "c.npz", {"w": hd.array([1.0]), "opt": [1, value]})
    assert not os.listdir(tmp_path)


def test_a_format_1_checkpoint_keeps_likes_values(tmp_path):
    hd.save(tmp_path / "c.npz", {"w": hd.array([1.0])})  # arrays only: format 1
    got = hd.load(tmp_path / "c.npz", like={"w": hd.array([0.0]), "step": 3})
    assert got["step"] == 3


def test_a_missing_or_extra_value_is_named(tmp_path):
    hd.save(tmp_path / "c.npz", {"w": hd.array([1.0]), "step": 7})
    with pytest.raises(ValueError, match=r"has no tree\['lr'\]"):
        hd.load(tmp_path / "c.npz", like={"w": hd.array([0.0]), "step": 0, "lr": 0.1})
    with pytest.raises(ValueError, match=r"like= has an array at tree\['step'\], but the "
                                         r"checkpoint .* holds the value 7 there"):
        hd.load(tmp_path / "c.npz", like={"w": hd.array([0.0]), "step": hd.array(0)})


def test_a_truncated_or_damaged_file_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "c.npz"
    hd.save(path, {"w": hd.array(np.arange(64, dtype=np.float32)), "step": 7})
    data = path.read_bytes()
    for n in (0, 10, len(data) // 3, len(data) // 2, len(data) - 30, len(data) - 1):
        path.write_bytes(data[:n])
        with pytest.raises(hd.CheckpointError, match="is damaged or truncated|not an hlodsl"):
            hd.load(path)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF  # inside the array's bytes: the zip's CRC says so
    path.write_bytes(bytes(flipped))
    with pytest.raises(hd.CheckpointError, match="damaged or truncated"):
        hd.load(path)


_WRITER = """
import sys, time, numpy as np, hlodsl as hd
write = np.lib.format.write_array
def slow(*args, **kwargs):
    write(*args, **kwargs)
    print("writing", flush=True)
    time.sleep(120)
np.lib.format.write_array = slow
hd.save(sys.argv[1], {"w": hd.array(np.zeros(1000, np.float32))})
"""


def _writer(path):
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "writing"
    return proc


def _temporaries(directory) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith(".tmp")]


def test_the_temporary_file_of_a_killed_save_is_removed_by_the_next_load(tmp_path):
    path = tmp_path / "c.npz"
    hd.save(path, {"w": hd.array([1.0])})
    proc = _writer(path)  # hd.save, stopped while it writes
    try:
        assert len(_temporaries(tmp_path)) == 1
        hd.load(path)  # a live writer holds its file: a sweep keeps it
        assert len(_temporaries(tmp_path)) == 1
    finally:
        proc.kill()
        proc.wait()
    assert len(_temporaries(tmp_path)) == 1  # SIGKILL: nothing of the writer ran
    np.testing.assert_array_equal(hd.load(path)["tree['w']"], [1.0])
    assert _temporaries(tmp_path) == []


_LOCKER = """
import fcntl, sys, time
f = open(sys.argv[1], "xb")
fcntl.flock(f.fileno(), fcntl.LOCK_EX)
f.write(b"half a checkpoint")
print("writing", flush=True)
time.sleep(120)
"""


def test_the_temporary_file_of_a_killed_writer_is_removed_by_the_next_save(tmp_path):
    """The same with a bare writer (a process that holds the lock as hd.save does)."""
    import subprocess
    import sys

    tmp = tmp_path / f".c.npz.{'ab' * 16}.tmp"
    other = tmp_path / f".d.npz.{'ab' * 16}.tmp"  # another checkpoint's: never touched
    other.write_bytes(b"")
    proc = subprocess.Popen([sys.executable, "-c", _LOCKER, str(tmp)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
        hd.save(tmp_path / "c.npz", {"w": hd.array([1.0])})
        assert tmp.exists()
    finally:
        proc.kill()
        proc.wait()
    hd.save(tmp_path / "c.npz", {"w": hd.array([2.0])})
    assert not tmp.exists() and other.exists()
