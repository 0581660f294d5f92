"""hd.export / Exported.serialize / hd.deserialize: a program saved as bytes runs elsewhere.

The oracle of an exported program is the function it was exported from, run by
``hd.compile`` in this process (and numpy for the loss); the deserialized program
runs in a fresh interpreter that cannot import this file.
"""

import json
import os
import pickle
import struct
import subprocess
import sys

import attrs
import numpy as np
import pytest

import hlodsl as hd
from hlodsl.interchange import exported as ex

F32 = hd.float32
MASK = np.linspace(0.5, 1.5, 16, dtype=np.float32)  # a captured constant (XLA elides > 10)


def mlp_loss(params, x, y):
    h = hd.stdlib.tanh(x @ params["layers"][0]["w"] + params["layers"][0]["b"])
    out = (h * hd.array(MASK)) @ params["layers"][1]["w"]
    return hd.stdlib.mean((out - y) ** 2)


def train_step(params, batch, lr):
    loss, grads = hd.value_and_grad(mlp_loss)(params, *batch)
    new = hd.tree_map(lambda p, g: p - lr * g, params, grads)
    return new, {"loss": loss}


def _params(rng):
    return {"layers": [{"w": rng.standard_normal((4, 16)).astype(np.float32),
                        "b": rng.standard_normal(16).astype(np.float32)},
                       {"w": rng.standard_normal((16, 2)).astype(np.float32)}]}


@pytest.fixture(scope="module")
def step():
    """The training step exported from abstract types (one staging, one conversion)."""
    rng = np.random.default_rng(0)
    params = hd.tree_map(hd.array, _params(rng))
    abstract = {"layers": [{"w": hd.ArrayType(F32, (4, 16)), "b": hd.ArrayType(F32, (16,))},
                           {"w": hd.ArrayType(F32, (16, 2))}]}
    batch = (hd.ArrayType(F32, (5, 4)), hd.ArrayType(F32, (5, 2)))
    exported = hd.export(train_step, abstract, batch, 0.125)
    return exported, params


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return (_params(rng), (rng.standard_normal((5, 4)).astype(np.float32),
                           rng.standard_normal((5, 2)).astype(np.float32)))


SERVER = r"""
import json, sys, numpy as np, hlodsl as hd
assert "test_export" not in sys.modules
step = hd.deserialize(open(sys.argv[1], "rb").read())
data = np.load(sys.argv[2])
params = {"layers": [{"w": data["w0"], "b": data["b0"]}, {"w": data["w1"]}]}
new, out = step(params, (data["x"], data["y"]), 0.125)
np.savez(sys.argv[3], w0=new["layers"][0]["w"], b0=new["layers"][0]["b"],
         w1=new["layers"][1]["w"], loss=out["loss"])
solve = hd.deserialize(open(sys.argv[4], "rb").read())  # LAPACK kernels (custom calls)
np.save(sys.argv[5], solve(data["a"], data["b"]))
try:
    step(params, (data["x"][:, :3], data["y"]), 0.125)
except TypeError as e:
    print(json.dumps({"error": str(e), "repr": repr(step)}))
"""


@pytest.mark.compat  # the jaxlib conversions: HLO -> StableHLO artifact -> HLO
def test_a_fresh_process_runs_the_deserialized_step_equal_to_the_function(step, tmp_path):
    exported, _ = step
    (tmp_path / "step.hlodsl").write_bytes(exported.serialize())
    solve = hd.export(hd.stdlib.linalg.solve, hd.ArrayType(hd.float64, (3, 3)),
                      hd.ArrayType(hd.float64, (3, 2)))
    (tmp_path / "solve.hlodsl").write_bytes(solve.serialize())
    params, (x, y) = _inputs(1)
    a, b = np.random.default_rng(1).standard_normal((2, 3, 3))[0], np.ones((3, 2))
    np.savez(tmp_path / "in.npz", w0=params["layers"][0]["w"], b0=params["layers"][0]["b"],
             w1=params["layers"][1]["w"], x=x, y=y, a=a, b=b)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", SERVER, "step.hlodsl", "in.npz", "out.npz",
                          "solve.hlodsl", "solved.npy"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "solved.npy"), np.linalg.solve(a, b),
                               rtol=1e-12)
    got = np.load(tmp_path / "out.npz")
    new, out = hd.compile(train_step)(hd.tree_map(hd.array, params), (x, y), 0.125)
    np.testing.assert_allclose(got["loss"], np.asarray(out["loss"]), rtol=1e-6)
    for key, want in (("w0", new["layers"][0]["w"]), ("b0", new["layers"][0]["b"]),
                      ("w1", new["layers"][1]["w"])):
        np.testing.assert_allclose(got[key], np.asarray(want), rtol=1e-6, atol=1e-7)
    h = np.tanh(x @ params["layers"][0]["w"] + params["layers"][0]["b"])
    loss = np.mean(((h * MASK) @ params["layers"][1]["w"] - y) ** 2)
    np.testing.assert_allclose(got["loss"], loss, rtol=1e-5)
    message = json.loads(run.stdout.strip().splitlines()[-1])
    assert "train_step (exported): argument batch[0] must be f32[5,4] as exported, got " \
           "f32[5,3]" in message["error"]
    assert message["repr"] == repr(exported)


def test_the_exported_program_records_structure_types_and_versions(step):
    exported, _ = step
    assert exported.in_paths == ("params['layers'][0]['w']", "params['layers'][0]['b']",
                                 "params['layers'][1]['w']", "batch[0]", "batch[1]")
    assert exported.in_types == (hd.ArrayType(F32, (4, 16)), hd.ArrayType(F32, (16,)),
                                 hd.ArrayType(F32, (16, 2)), hd.ArrayType(F32, (5, 4)),
                                 hd.ArrayType(F32, (5, 2)))
    assert exported.out_paths == ("out[0]['layers'][0]['w']", "out[0]['layers'][0]['b']",
                                  "out[0]['layers'][1]['w']", "out[1]['loss']")
    assert exported.out_types[-1] == hd.ArrayType(F32, ())
    assert exported.in_shardings == (None,) * 5 and exported.donated == ()
    assert set(exported.versions) == {"hlodsl", "jax", "jaxlib", "stablehlo"}
    back = hd.deserialize(exported.serialize())
    for field in ("name", "in_paths", "in_types", "out_paths", "out_types", "in_tree",
                  "out_tree", "versions", "platform"):
        assert getattr(back, field) == getattr(exported, field), field
    assert back.artifact() == exported.artifact()


def test_the_exported_program_runs_in_process_and_pickles_as_its_bytes(step):
    exported, params = step
    _, (x, y) = _inputs(2)
    new, out = hd.compile(train_step)(params, (x, y), 0.125)
    for g in (exported, pickle.loads(pickle.dumps(exported))):
        got_new, got_out = g(params, (x, y), 0.125)
        np.testing.assert_allclose(np.asarray(got_out["loss"]), np.asarray(out["loss"]),
                                   rtol=1e-6)
        np.testing.assert_allclose(np.asarray(got_new["layers"][1]["w"]),
                                   np.asarray(new["layers"][1]["w"]), rtol=1e-6, atol=1e-7)


@pytest.mark.compat  # jaxlib's MLIR bindings, as StableHLO's own tooling
def test_stablehlo_tooling_reads_the_artifact(step):
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    exported, _ = step
    artifact = exported.artifact()
    assert artifact.startswith(b"ML\xefR") and b"StableHLO_v" + ex.TARGET.encode() in artifact
    context = ir.Context()
    stablehlo.register_dialect(context)
    with context:
        module = stablehlo.deserialize_portable_artifact(context, artifact)
        main = [op for op in module.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "main"][0]
        text = str(module)
    assert [str(a.type) for a in main.regions[0].blocks[0].arguments] == [
        "tensor<4x16xf32>", "tensor<16xf32>", "tensor<16x2xf32>", "tensor<5x4xf32>",
        "tensor<5x2xf32>"]
    assert "stablehlo.dot_general" in text and "stablehlo.tanh" in text
    assert exported.mlir_text() == text
    hlo = exported.hlo_text()  # what hd.import_hlo reads: constants printed whole
    assert "ENTRY" in hlo and "tanh(" in hlo and "{...}" not in hlo
    assert "constant({0.5, " in hlo


def test_static_values_are_kept_exactly_and_checked_at_the_call():
    def f(x, n, scale, mode, flag=None):
        return x * (n * scale) if mode == "mul" else x

    e = hd.deserialize(hd.export(f, hd.ArrayType(F32, (2,)), 3, -0.0, "mul").serialize())
    got = e(np.float32([1, -2]), 3, -0.0, "mul")
    assert np.signbit(np.asarray(got)).tolist() == [True, False]  # x * -0.0, kept as -0.0
    with pytest.raises(TypeError, match=r"static values \[3, -0.0, 'mul'\]; got 1 array\(s\) "
                                        r"\(args\[0\]: f32\[2\]\) and static values "
                                        r"\[3, 0.0, 'mul'\]"):
        e(np.float32([1, -2]), 3, 0.0, "mul")


def test_numbers_given_for_arrays_become_arrays_of_their_kind():
    e = hd.export(lambda x, scale, n: x * scale + n, hd.ArrayType(F32, (2,)),
                  hd.ArrayType(F32, ()), hd.ArrayType(hd.int32, ()))
    assert np.asarray(e(np.float32([1, 2]), 0.5, 3)).tolist() == [3.5, 4.0]  # weak: as f32
    assert np.asarray(e(np.float32([1, 2]), np.float32(2), np.int32(1))).tolist() == [3.0, 5.0]
    with pytest.raises(TypeError, match=r"argument scale must be f32\[\] as exported, got "
                                        r"f64\[\]"):
        e(np.float32([1, 2]), np.float64(2), 1)  # a numpy scalar keeps its own type
    with pytest.raises(TypeError, match="structure differs"):
        e(np.float32([1, 2]), 0.5, 1.5)  # a float is no int32


@attrs.frozen
class State:
    w: object


@pytest.mark.parametrize("args, message", [
    ((State(hd.ArrayType(F32, (2,))),), r"export\(f\): argument a\[0\] is a State "
                                        r"instance; an exported program is called without"),
    ((hd.ArrayType(F32, (2,)), object()), r"argument a\[1\] is a static object value"),
    (({1: hd.ArrayType(F32, (2,))},), "a dict with non-string keys"),
])
def test_structures_an_artifact_cannot_hold_are_refused_at_export(args, message):
    def f(*a):
        return hd.tree_leaves(a)[0] * 2

    with pytest.raises(hd.ExportError, match=message):
        hd.export(f, *args)


def test_wrong_arguments_name_the_argument_and_both_types(step):
    exported, params = step
    _, (x, y) = _inputs(3)
    with pytest.raises(TypeError, match=r"argument batch\[1\] must be f32\[5,2\] as exported, "
                                        r"got f64\[5,2\]"):
        exported(params, (x, y.astype(np.float64)), 0.125)
    with pytest.raises(TypeError, match=r"argument params\['layers'\]\[0\]\['b'\] must be "
                                        r"f32\[16\] as exported, got f32\[9\]"):
        exported({"layers": [{"w": params["layers"][0]["w"], "b": np.zeros(9, np.float32)},
                             params["layers"][1]], }, (x, y), 0.125)
    with pytest.raises(TypeError, match="structure differs from the exported one"):
        exported(params, (x,), 0.125)
    with pytest.raises(TypeError, match=r"got 1 array\(s\) \(args\[0\]\.w: f32\[2\]\) and "
                                        r"static values \[0\.125\]"):
        exported(State(np.float32([1, 2])), 0.125)
    with pytest.raises(TypeError, match="a symbolic array"):
        hd.compile(lambda x, y: exported(params, (x, y), 0.125)[1]["loss"])(x, y)


# -- bytes that cannot be read: each says why ---------------------------------------------

def _craft(data: bytes, fmt=None, **meta_changes) -> bytes:
    """``data`` with its format field or metadata changed, the header kept consistent."""
    _, old_fmt, length = ex._HEADER.unpack_from(data)
    meta = json.loads(data[ex._HEADER.size:ex._HEADER.size + length])
    for key, value in meta_changes.items():
        meta["versions"][key] = value
    blob = json.dumps(meta).encode()
    return ex._HEADER.pack(ex.MAGIC, old_fmt if fmt is None else fmt, len(blob)) + blob + \
        data[ex._HEADER.size + length:]


@pytest.fixture(scope="module")
def small():
    return hd.export(lambda x: x + 1, hd.ArrayType(F32, (2,))).serialize()


def test_a_newer_format_names_both_versions(small):
    with pytest.raises(hd.ExportError, match=r"export format 2, written by hlodsl 9\.9\.0; "
                                             r"this hlodsl \(.+\) reads format 1: upgrade"):
        hd.deserialize(_craft(small, fmt=2, hlodsl="9.9.0"))


def test_a_newer_stablehlo_names_both_versions(small):
    here = hd.interchange.exported._hlodsl_version()
    with pytest.raises(hd.ExportError, match=r"StableHLO 99\.0\.0 \(written by hlodsl "
                                             rf"{here} with jaxlib 9\.9\); this jaxlib .* reads "
                                             r"StableHLO up to 1\.\d+\.\d+: upgrade jaxlib"):
        hd.deserialize(_craft(small, stablehlo="99.0.0", jaxlib="9.9"))


def test_an_older_hlodsl_version_in_the_same_format_loads(small):
    old = hd.deserialize(_craft(small, hlodsl="0.0.1"))
    assert old.versions["hlodsl"] == "0.0.1"
    assert np.asarray(old(np.float32([1, 2]))).tolist() == [2.0, 3.0]


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:-10], "damaged or truncated"),
    (lambda b: b[:-10] + b"0123456789", "damaged or truncated"),
    (lambda b: b"PK\x03\x04" + b[4:], "not an exported hlodsl program"),
    (lambda b: b[:20] + b"\xff" + b[21:], "metadata of these bytes is not valid JSON"),
    (lambda b: b[:10], "not an exported hlodsl program"),
])
def test_damaged_bytes_say_what_is_wrong(small, damage, message):
    with pytest.raises(hd.ExportError, match=message):
        hd.deserialize(damage(small))


def test_not_bytes_is_a_type_error():
    with pytest.raises(TypeError, match="deserialize: data must be bytes"):
        hd.deserialize("HLODSLX")


def test_struct_layout_is_the_documented_one(small):
    magic, fmt, length = struct.unpack_from("<8sHI", small)
    assert (magic, fmt) == (b"HLODSLX\n", 1)
    assert json.loads(small[14:14 + length])["versions"]["stablehlo"] == ex.TARGET


def test_a_compiled_function_exports_the_program_its_passes_leave():
    f = hd.compile(lambda a, b, c: (a @ b) @ c, passes=[hd.passes.MatrixChain()])
    types = [hd.ArrayType(F32, s) for s in ((2, 50), (50, 50), (50, 1))]
    e = hd.export(f, *types)
    dots = [line.split(" = ")[1].split()[0] for line in e.hlo_text().splitlines()
            if " dot(" in line]
    assert dots == ["f32[50,1]{1,0}", "f32[2,1]{1,0}"]  # a @ (b @ c): the cheaper order
    a, b, c = (np.random.default_rng(4).standard_normal(t.shape).astype(np.float32)
               for t in types)
    np.testing.assert_allclose(np.asarray(e(a, b, c)), (a @ b) @ c, rtol=1e-4)


@pytest.mark.compat  # the artifact's StableHLO is read back through jaxlib
@pytest.mark.parametrize("form", ["exported", "bytes"])
def test_import_hlo_reads_an_artifact_as_hlodsl_ops(step, form):
    exported, params = step
    _, (x, y) = _inputs(4)
    new, out = exported(params, (x, y), 0.125)
    imported = hd.import_hlo(exported if form == "exported" else exported.serialize())
    flat = [hd.array(a) for a in (*hd.tree_leaves(params), x, y)]  # in_paths' order
    got = imported(*flat)
    want = (*hd.tree_leaves(new), out["loss"])  # out_paths' order
    assert len(got) == len(want) == len(exported.out_paths)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-7)


def test_an_imported_artifact_keeps_the_sign_of_a_negative_zero_constant():
    # XLA prints -0.0 as "-0"; read as an integer it would lose its sign.
    exported = hd.export(lambda x: x * -0.0, hd.ArrayType(F32, (2,)))
    got = hd.import_hlo(exported)(hd.array(np.float32([1, 2])))
    assert np.signbit(np.asarray(got)).all()


def test_donation_is_kept_and_a_call_of_either_form_consumes_the_donated_arrays():
    compiled = hd.compile(train_step, donate_argnums=0)
    rng = np.random.default_rng(5)
    params = hd.tree_map(hd.array, _params(rng))
    batch = tuple(map(hd.array, _inputs(6)[1]))
    exported = hd.export(compiled, params, batch, 0.125)
    assert exported.donated == (0, 1, 2)  # the params' arrays, which the results replace
    back = hd.deserialize(exported.serialize())
    assert back.donated == exported.donated
    want, _ = hd.compile(train_step)(params, batch, 0.125)
    for program in (exported, back):
        given = hd.tree_map(lambda a: hd.array(np.asarray(a)), params)
        new, _ = program(given, batch, 0.125)
        for got, expected in zip(hd.tree_leaves(new), hd.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)
        with pytest.raises(hd.DonatedArrayError, match="exported"):
            np.asarray(given["layers"][0]["w"])
        assert program._executable().memory_stats()["alias_size_in_bytes"] > 0
    axpy = hd.export(hd.compile(lambda w, x: w + x, donate_argnums=0),
                     hd.ArrayType(F32, (2,)), hd.ArrayType(F32, (2,)))
    a = hd.array(np.float32([1, 2]))
    with pytest.raises(ValueError, match="donated argument w is also passed"):
        axpy(a, a)
