"""Dot and convolution precision: per call (``precision=``) and global
(``hd.config.default_matmul_precision``), emitted as HLO's ``operand_precision``
the way jax emits it, kept by derivatives and vmap, and never changing results on
XLA:CPU (which computes at the operands' precision). What it changes on a GPU
(TF32 against full float32) is measured on the device, not here."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import ops, runtime
from hlodsl.stdlib import nn

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4)).astype(np.float32)
B = RNG.normal(size=(4, 5)).astype(np.float32)
X = RNG.normal(size=(1, 2, 6, 6)).astype(np.float32)
W = RNG.normal(size=(3, 2, 3, 3)).astype(np.float32)


@pytest.fixture
def default_precision():
    """Set ``hd.config.default_matmul_precision`` for one test, restored after it."""
    before = hd.config.default_matmul_precision
    yield lambda p: setattr(hd.config, "default_matmul_precision", p)
    hd.config.default_matmul_precision = before


def _precisions(text: str, opcode: str) -> list[str]:
    """The operand_precision of every ``opcode`` instruction in HLO text ('' if none)."""
    out = []
    for line in text.splitlines():
        if f" {opcode}(" in line:
            m = re.search(r"operand_precision=\{([^}]*)\}", line)
            out.append(m.group(1) if m else "")
    return out


def _jax_attribute(p: str) -> str:
    text = jax.jit(lambda a, b: jnp.dot(a, b, precision=p)).lower(A, B).as_text(dialect="hlo")
    return _precisions(text, "dot")[0]


@pytest.mark.parametrize("p", ["default", "high", "highest"])
def test_matmul_precision_is_emitted_as_jax_emits_it(p):
    text = hd.code_hlo(lambda a, b: xp.matmul(a, b, precision=p), A, B)
    assert _precisions(text, "dot") == [_jax_attribute(p)]


def test_the_global_default_applies_to_every_product_and_a_call_overrides_it(
        default_precision):
    default_precision("default")  # (tests/conftest.py sets "highest" on GPUs)
    products = {
        "matmul": (lambda a, b: xp.matmul(a, b), "dot"),
        "tensordot": (lambda a, b: xp.tensordot(a, b, axes=1), "dot"),
        "linear": (lambda a, b: nn.linear(a, xp.matrix_transpose(b)), "dot"),
        "@": (lambda a, b: a @ b, "dot"),
    }
    assert all(_precisions(hd.code_hlo(f, A, B), op) == [""] for f, op in products.values())
    default_precision("highest")
    for name, (f, op) in products.items():
        assert _precisions(hd.code_hlo(f, A, B), op) == ["highest,highest"], name
    conv = hd.code_hlo(lambda x, w: nn.conv(x, w), X, W)
    assert _precisions(conv, "convolution") == ["highest,highest"]
    mine = hd.code_hlo(lambda a, b: xp.matmul(a, b, precision=("high", "default")), A, B)
    assert _precisions(mine, "dot") == ["high,default"]


def test_derivatives_and_vmap_keep_the_precision():
    loss = lambda a, b: xp.sum(xp.matmul(a, b, precision="highest") ** 2)  # noqa: E731
    text = hd.code_hlo(hd.grad(loss, argnums=(0, 1)), A, B)
    assert _precisions(text, "dot") == ["highest,highest"] * 3  # forward and two transposes
    conv_loss = lambda x, w: xp.sum(nn.conv(x, w, precision="high"))  # noqa: E731
    text = hd.code_hlo(hd.grad(conv_loss, argnums=(0, 1)), X, W)
    assert set(_precisions(text, "convolution")) == {"high,high"}
    batched = hd.vmap(lambda a: xp.matmul(a, hd.array(B), precision="highest"))
    assert _precisions(hd.code_hlo(batched, np.stack([A, A])), "dot") == ["highest,highest"]


@pytest.mark.parametrize("p", ["default", "high", "highest", ("highest", "default")])
def test_every_precision_compiles_and_computes_the_same_on_cpu(p):
    got = hd.compile(lambda a, b: xp.matmul(a, b, precision=p))(A, B)
    np.testing.assert_allclose(np.asarray(got), A @ B, rtol=1e-6, atol=1e-6)
    y = hd.compile(lambda x, w: nn.conv(x, w, precision=p))(X, W)
    ref = jax.lax.conv(X, W, (1, 1), "VALID", precision="highest")
    np.testing.assert_allclose(np.asarray(y), np.asarray(ref), rtol=1e-5, atol=1e-5)


def test_changing_the_default_recompiles_what_was_compiled_before(default_precision):
    default_precision("default")
    f = hd.compile(lambda a, b: a @ b)
    f(A, B)
    before = runtime.stats["compiles"]
    f(A, B)
    assert runtime.stats["compiles"] == before  # cached
    default_precision("highest")
    np.testing.assert_allclose(np.asarray(f(A, B)), A @ B, rtol=1e-6)
    assert runtime.stats["compiles"] == before + 1  # staged again, with the new precision


def test_bad_precisions_are_refused_with_the_allowed_values():
    with pytest.raises(ValueError, match="'fastest'.*'default', 'high', 'highest'"):
        ops.Dot((1,), (0,), precision="fastest")
    with pytest.raises(ValueError, match="'tf32'"):
        xp.matmul(hd.array(A), hd.array(B), precision="tf32")
    with pytest.raises(TypeError, match="a pair of them"):
        ops.Convolution(precision=("high", "high", "high"))
    before = hd.config.default_matmul_precision
    with pytest.raises(ValueError, match="default_matmul_precision: must be one of"):
        hd.config.default_matmul_precision = "bf16"
    assert hd.config.default_matmul_precision == before
