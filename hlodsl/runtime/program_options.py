"""XLA options chosen per program, from what its HLO text holds (issue 42).

``COMPILER_OPTIONS`` are the same for every program; some of XLA:CPU's choices
are better for one kind of program and worse for another, and the program's
text says which kind it is. Each rule in ``PROGRAM_RULES[platform]`` reads the
module text and returns options for it (``{}``: none); ``compile_hlo`` puts
them over ``COMPILER_OPTIONS`` and under options a caller passes, and the
persistent cache keys them as it keys every option. Edit (or empty) the list to
change the rules for the programs compiled after the edit.

The one rule today: **YNNPACK's reductions for split reductions on XLA:CPU.**
A reduction that keeps a middle dimension (batch norm's per-channel statistics
of an NCHW ``(N, C, H, W)`` activation keep ``C`` and reduce ``N``, ``H``,
``W``) is neither a row nor a column reduction, and XLA's own loop emitter runs
it at a small fraction of memory speed (it also recomputes the normalised
values inside each reduction fusion). YNNPACK's reductions take the ResNet
training step of ``benchmarks.torch_cpu`` to 0.77-0.81x its time. Everywhere
else they cost time (a GPT step 1.04x, the transformer block step 1.39x:
rows of 256 that XLA fuses with their producers, YNNPACK reads from memory),
so they are not on by default: ``benchmarks.xla_options`` measures both.

>>> split_reductions('''HloModule m
... ENTRY e {
...   x = f32[32,16,32,32] parameter(0)
...   c = f32[] constant(0)
...   ROOT r = f32[16] reduce(x, c), dimensions={0,2,3}, to_apply=add
... }''')
[('reduce', (32, 16, 32, 32), (1,))]
>>> text = '''HloModule m
... ENTRY e {
...   x = f32[32,16,32,32] parameter(0)
...   w = f32[16] parameter(1)
...   b = f32[16] parameter(2)
...   ROOT t = (f32[32,16,32,32], f32[16], f32[16]) batch-norm-training(x, w, b), epsilon=1e-05, feature_index=1
... }'''
>>> from hlodsl.runtime import COMPILER_OPTIONS
>>> program_options(text, "cpu", COMPILER_OPTIONS["cpu"])
{'xla_cpu_experimental_ynn_fusion_type': 'LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_REDUCE'}
>>> program_options(text, "gpu", {}), program_options(text, "cpu", {})  # a user's own choice
({}, {})
"""

from __future__ import annotations

import math
import re
from typing import Callable

__all__ = ["PROGRAM_RULES", "program_options", "split_reductions", "library_reductions",
           "SPLIT_REDUCTION_ELEMENTS"]

#: A split reduction over fewer elements than this does not choose the program's
#: options: its time is too small to matter.
SPLIT_REDUCTION_ELEMENTS = 1 << 16

_YNN = "xla_cpu_experimental_ynn_fusion_type"
_DOTS = "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"  # hlodsl's default (COMPILER_OPTIONS)
_REDUCE = "LIBRARY_FUSION_TYPE_REDUCE"

# One instruction: name, array dims ("" for a tuple or a scalar), opcode, operands,
# attributes. Our printer writes operands as names; XLA's (an imported module) as
# "f32[2,3]{1,0} %x": _TYPE takes the types out.
_INST = re.compile(
    r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(?:\w+\[([\d,]*)\]\S*|\([^=]*?\))\s+"
    r"([a-z][a-z0-9-]*)\(([^)]*)\)(.*)$", re.MULTILINE)
_TYPE = re.compile(r"\w+\[[\d,]*\](?:\{[^}]*\})?")
_DIMS = re.compile(r"dimensions=\{([\d,]*)\}")
_FEATURE = re.compile(r"feature_index=(\d+)")
#: The reductions and what says which dimensions they keep.
_REDUCTIONS = {"reduce": _DIMS, "batch-norm-training": _FEATURE, "batch-norm-grad": _FEATURE}


def _first_operand(operands: str) -> str:
    first = _TYPE.sub("", operands).split(",")[0].strip()
    return first.lstrip("%")


def split_reductions(text: str, min_elements: int | None = None) -> list:
    """``(opcode, operand shape, kept dims)`` of each reduction in ``text`` that keeps
    dimensions which are neither the operand's leading nor its trailing ones (a
    ``reduce``, or batch norm's statistics: ``batch-norm-training``/``-grad`` keep
    ``feature_index``), over at least ``min_elements`` elements
    (``SPLIT_REDUCTION_ELEMENTS`` by default).

    Shapes are read in row-major order, as hlodsl prints every module (an imported
    module's other layouts only make the rule choose less well: options, not values).
    """
    if "reduce(" not in text and "batch-norm-" not in text:
        return []
    if min_elements is None:
        min_elements = SPLIT_REDUCTION_ELEMENTS
    shapes: dict[str, tuple] = {}
    found = []
    for name, dims, opcode, operands, rest in _INST.findall(text):
        shapes[name] = tuple(int(d) for d in dims.split(",") if d)  # () for a tuple
        says = _REDUCTIONS.get(opcode)
        if says is None:
            continue
        m = says.search(rest)
        src = shapes.get(_first_operand(operands))
        if m is None or not src:
            continue
        rank = len(src)
        if says is _FEATURE:  # batch norm: one feature kept
            kept = (int(m.group(1)),)
        else:
            reduced = {int(d) for d in m.group(1).split(",") if d}
            kept = tuple(d for d in range(rank) if d not in reduced)
        k = len(kept)
        if (math.prod(src) >= min_elements and 0 < k < rank and kept != tuple(range(k))
                and kept != tuple(range(rank - k, rank))):
            found.append((opcode, src, kept))
    return found


def library_reductions(text: str, options: dict[str, str]) -> dict[str, str]:
    """YNNPACK's reductions too where ``text`` has a split reduction and the dots alone
    are handed to YNNPACK (hlodsl's default: a user's own choice is left alone)."""
    if options.get(_YNN) != _DOTS or not split_reductions(text):
        return {}
    return {_YNN: f"{_DOTS},{_REDUCE}"}


#: Per platform, the rules ``program_options`` applies: ``rule(text, options)`` ->
#: options for this program, ``options`` being those in effect without the rules.
PROGRAM_RULES: dict[str, list[Callable[[str, dict], dict]]] = {"cpu": [library_reductions]}


def program_options(text: str, platform: str, options: dict[str, str]) -> dict[str, str]:
    """The options ``PROGRAM_RULES[platform]`` choose for the module ``text``, given the
    ``options`` in effect otherwise."""
    out: dict[str, str] = {}
    for rule in PROGRAM_RULES.get(platform, ()):
        out.update(rule(text, {**options, **out}))
    return out
