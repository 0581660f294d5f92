"""Programs from elsewhere: HLO text of jax's programs and of StableHLO, for
hlodsl.import_hlo and hlodsl.from_jax.

A bridge may lower a user's jax function with jax (``lower_jax``); nothing else
in hlodsl uses jax's tracing.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import jax
import jaxlib.xla_client as xc

from . import jaxlib_compat as compat

__all__ = ["computation_text", "stablehlo_text", "check_hlo_text", "lower_jax", "jax_stage_text"]

# -- programs from elsewhere: HLO text for hlodsl.import_hlo ------------------------------

_ELIDED = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*\bconstant\(\{\.\.\.\}\)")
_CONSTANT_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*\bconstant\(")


def computation_text(computation) -> str:
    """HLO text of an ``XlaComputation`` with its source metadata and whole constants.

    ``as_hlo_module().to_string()`` keeps each instruction's stack frame (the
    producer's file and line) but elides large constants as ``{...}``;
    ``as_hlo_text(print_large_constants=True)`` prints them but no metadata. The
    same module prints the same names in both, so elided constants are filled in.
    """
    text = computation.as_hlo_module().to_string()
    if "{...}" not in text:
        return text
    full = {}
    for line in computation.as_hlo_text(print_large_constants=True).splitlines():
        m = _CONSTANT_LINE.match(line)
        if m:
            full[m[1]] = line[line.index("constant("):]
    out = []
    for line in text.splitlines():
        m = _ELIDED.match(line)
        if m and m[1] in full:
            line = line.replace("constant({...})", _constant_call(full[m[1]]))
        out.append(line)
    return "\n".join(out) + "\n"


def _constant_call(text: str) -> str:
    """``constant(...)`` with balanced parentheses from the start of ``text``."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == ")":
            return text[:k + 1]
    return text


def stablehlo_text(module: str | bytes) -> str:
    """HLO text (with source metadata, constants whole) of a StableHLO/MLIR module,
    text or bytecode. XLA prints a ``-0.0`` constant as ``-0``, which reads back as
    ``0.0``: compile the StableHLO itself (``compile_hlo(stablehlo=...)``), not this text."""
    return computation_text(compat.stablehlo_to_computation(module))


def check_hlo_text(text: str) -> None:
    """Raise ``ValueError`` with XLA's own message where ``text`` is not a valid HLO module."""
    try:
        xc.hlo.hlo_module_from_text(text)
    except Exception as e:  # noqa: BLE001 (XLA raises its own status error types)
        raise ValueError(str(e)) from None


def lower_jax(fn, args: tuple, platform: str | None = None):
    """``fn`` lowered by ``jax.jit`` on arrays like ``args`` (a pytree of arrays).

    Returns ``(hlo_text, flatten, unflatten)``: the module's text with source
    metadata, a function from arguments structured as ``args`` to the module's
    parameter list, and one from the module's results to ``fn``'s output
    structure. Unused arguments stay parameters (``keep_unused``), so the
    parameter list is always the flattened arguments. ``platform`` (jax's name:
    ``"cpu"``, ``"cuda"``; default: the backend's) is the platform jax lowers for,
    which need not be this machine's (jax cross-lowers: ``lowering_platforms``).
    """
    leaves, treedef = jax.tree_util.tree_flatten(args)
    specs = [jax.ShapeDtypeStruct(tuple(leaf.type.shape), leaf.type.dtype.np_dtype)
             if hasattr(leaf, "type") else
             jax.ShapeDtypeStruct(np.shape(leaf), np.result_type(leaf)) for leaf in leaves]

    @functools.wraps(fn)  # jax names the module and its op_names after fn
    def flat_fn(*flat):
        return fn(*jax.tree_util.tree_unflatten(treedef, flat))

    jitted = jax.jit(flat_fn, keep_unused=True)
    if platform is None:
        lowered = jitted.lower(*specs)
    else:
        lowered = jitted.trace(*specs).lower(lowering_platforms=(platform,))
    out_tree = lowered.out_tree

    def flatten(call_args: tuple) -> list:
        flat, tree = jax.tree_util.tree_flatten(call_args)
        if tree != treedef:
            raise TypeError(f"arguments structured as {tree}, but the jax function was "
                            f"imported for {treedef}")
        return flat

    def unflatten(results):
        flat = list(results) if isinstance(results, tuple) else [results]
        return jax.tree_util.tree_unflatten(out_tree, flat)

    return computation_text(lowered.compiler_ir("hlo")), flatten, unflatten


def jax_stage_text(stage) -> str:
    """HLO text of a jax ``Lowered`` or ``Compiled`` stage (the latter optimised by XLA)."""
    if hasattr(stage, "compiler_ir"):
        return computation_text(stage.compiler_ir("hlo"))
    return stage.as_text()
