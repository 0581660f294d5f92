"""Programs from elsewhere: HLO text of jax's programs and of StableHLO, for
hlodsl.import_hlo and hlodsl.from_jax.

A bridge may lower a user's jax function with jax (``lower_jax``); nothing else
in hlodsl uses jax's tracing.
"""

from __future__ import annotations

import functools

import numpy as np
import jax
import jaxlib.xla_client as xc

from . import jaxlib_compat as compat
from .reader_worker import merged_constants

__all__ = ["computation_text", "stablehlo_text", "check_hlo_text", "lower_jax", "flat_jax",
           "lower_flat", "jax_specs", "jax_stage_text"]

# -- programs from elsewhere: HLO text for hlodsl.import_hlo ------------------------------

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
    return merged_constants(text, computation.as_hlo_text(print_large_constants=True))


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


def jax_specs(leaves) -> list:
    """``jax.ShapeDtypeStruct``s of array leaves (numpy, jax or hlodsl arrays, or specs)."""
    return [jax.ShapeDtypeStruct(tuple(leaf.type.shape), leaf.type.dtype.np_dtype)
            if hasattr(leaf, "type") else
            jax.ShapeDtypeStruct(np.shape(leaf), np.result_type(leaf)) for leaf in leaves]


def lower_flat(flat_fn, specs: list, platform: str | None = None) -> tuple[str, list]:
    """``flat_fn`` (arrays in, a list of arrays out) lowered by ``jax.jit`` on ``specs``:
    the module's HLO text (with source metadata) and the results' specs. ``platform``
    (jax's name: ``"cpu"``, ``"cuda"``; default: the backend's) is the platform jax
    lowers for, which need not be this machine's (``lowering_platforms``)."""
    jitted = jax.jit(flat_fn, keep_unused=True)
    if platform is None:
        lowered = jitted.lower(*specs)
    else:
        lowered = jitted.trace(*specs).lower(lowering_platforms=(platform,))
    return computation_text(lowered.compiler_ir("hlo")), list(lowered.out_info)


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
    flat_fn, specs, flatten, unflatten = flat_jax(fn, args)
    return lower_flat(flat_fn, specs, platform)[0], flatten, unflatten


def flat_jax(fn, args: tuple):
    """``fn`` as a function of its arguments' array leaves returning its results' leaves.

    Returns ``(flat_fn, specs, flatten, unflatten)``: ``specs`` the leaves of ``args``
    as ``jax.ShapeDtypeStruct``s, ``flatten`` from arguments structured as ``args``
    to their leaves, ``unflatten`` from result leaves (a list, a tuple, or one array)
    to ``fn``'s output structure (known once ``flat_fn`` was traced).
    """
    leaves, treedef = jax.tree_util.tree_flatten(args)
    specs = jax_specs(leaves)
    box = {}

    @functools.wraps(fn)  # jax names the module and its op_names after fn
    def flat_fn(*flat):
        out, box["tree"] = jax.tree_util.tree_flatten(
            fn(*jax.tree_util.tree_unflatten(treedef, flat)))
        return out

    def flatten(call_args: tuple) -> list:
        flat, tree = jax.tree_util.tree_flatten(call_args)
        if tree != treedef:
            raise TypeError(f"arguments structured as {tree}, but the jax function was "
                            f"imported for {treedef}")
        return flat

    def unflatten(results):
        flat = list(results) if isinstance(results, (tuple, list)) else [results]
        return jax.tree_util.tree_unflatten(box["tree"], flat)

    return flat_fn, specs, flatten, unflatten


def jax_stage_text(stage) -> str:
    """HLO text of a jax ``Lowered`` or ``Compiled`` stage (the latter optimised by XLA)."""
    if hasattr(stage, "compiler_ir"):
        return computation_text(stage.compiler_ir("hlo"))
    return stage.as_text()
