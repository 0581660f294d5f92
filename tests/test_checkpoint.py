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
    assert got["empty"][1:] == (5, "static from like")  # non-arrays come from like
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
     (r"has no tree\['layers'\]\[2\]\.W, tree\['layers'\]\[2\]\.b; like= must have the "
     r"structure")),
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
     r"holds tree\['narrow'\]\.second, which like= does not have"),
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
