"""docs/ops.md, generated from the op registry: ``python -m hlodsl.ops._catalog``.

The page lists every registered op (opcode, class, static operands, accepted
element types, how it is emitted) and every opcode of the installed XLA that
hlodsl does not offer, with the reason. ``tests/test_op_catalog.py`` fails
when the page and the registry disagree, or when XLA has an opcode that is
neither registered nor explained here.
"""

from __future__ import annotations

import re
import sys

import attrs

from hlodsl.ir.op import Composite, registry

__all__ = ["render", "library_ops", "xla_opcodes", "UNCOVERED"]

# Enum names whose HLO text differs from the mechanical kebab-case spelling.
_SPELLING = {
    "kExp": "exponential", "kExpm1": "exponential-minus-one", "kLog1p": "log-plus-one",
    "kSin": "sine", "kCos": "cosine", "kClz": "count-leading-zeros",
    "kPopulationCount": "popcnt", "kOptimizationBarrier": "opt-barrier", "kTopK": "topk",
    "kMulhi": "mulhi",
}

#: Opcodes of XLA's HLO that are not user operations, and why hlodsl leaves them out.
UNCOVERED = {
    "add-dependency": "scheduling edge inserted by XLA's passes",
    "all-gather-start": "async pair created by XLA's scheduler from all-gather",
    "all-gather-done": "async pair created by XLA's scheduler from all-gather",
    "all-reduce-start": "async pair created by XLA's scheduler from all-reduce",
    "all-reduce-done": "async pair created by XLA's scheduler from all-reduce",
    "async-start": "async wrapper created by XLA's passes",
    "async-update": "async wrapper created by XLA's passes",
    "async-done": "async wrapper created by XLA's passes",
    "bitcast": "layout-level reinterpretation created by XLA's layout assignment "
               "(users want bitcast-convert or reshape)",
    "collective-permute-start": "async pair created by XLA's scheduler",
    "collective-permute-done": "async pair created by XLA's scheduler",
    "copy-start": "async copy created by XLA's memory-space assignment",
    "copy-done": "async copy created by XLA's memory-space assignment",
    "domain": "sharding-domain marker created by XLA's passes",
    "dynamic-reshape": "dynamic shapes: hlodsl shapes are static",
    "fusion": "created by XLA's fusion passes",
    "get-dimension-size": "dynamic shapes: hlodsl shapes are static",
    "set-dimension-size": "dynamic shapes: hlodsl shapes are static",
    "infeed": "host streaming during execution: out of scope (arguments and results "
              "move data instead)",
    "outfeed": "host streaming during execution: out of scope",
    "send": "host/device channels: out of scope",
    "send-done": "host/device channels: out of scope",
    "recv": "host/device channels: out of scope",
    "recv-done": "host/device channels: out of scope",
    "rng-get-and-update-state": "internal state of the rng expander pass",
    "ragged-all-to-all": "ragged (dynamic-size) collective: hlodsl shapes are static",
    "scaled-dot": "block-scaled low-precision dot, GPU-only microscaling formats",
    "scan": "new in XLA, not yet in the StableHLO path used here; While expresses loops",
    "stochastic-convert": "XLA:CPU rejects it ('Unsupported stochastic convert: from F32 "
                          "to BF16'); not offered",
    # New in the XLA of jaxlib 0.12 (absent from 0.10.2 and 0.11.2, which hlodsl also runs on):
    "collective-reduce": "new in jaxlib 0.12's XLA only; all-reduce and reduce-scatter cover it",
    "exp2": "new in jaxlib 0.12's XLA only; a composite of exponential and multiply elsewhere",
    "log2": "new in jaxlib 0.12's XLA only; xp.log2 is a composite of log and divide",
    "shuffle": "new in jaxlib 0.12's XLA only; not offered until every supported jaxlib has it",
}


def _spelling(enum_name: str) -> str:
    if enum_name in _SPELLING:
        return _SPELLING[enum_name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", enum_name[1:]).lower()


def xla_opcodes() -> list[str]:
    """The HLO text opcodes of the installed XLA (from jaxlib's HloOpcode enum)."""
    from hlodsl.runtime import hlo_opcode_enum_names

    return sorted(_spelling(n) for n in hlo_opcode_enum_names())


def library_ops() -> dict[str, type]:
    """The registry without ops defined outside hlodsl (by users, tests, doc examples)."""
    return {k: v for k, v in registry().items() if v.__module__.startswith("hlodsl.")}


def _kinds(cls) -> str:
    kinds = getattr(cls, "kinds", None)
    if kinds is None:
        return "per shape rule"
    return ", ".join(k.__name__ for k in kinds)


def _fields(cls) -> str:
    if not attrs.has(cls):
        return ""
    return ", ".join(f.name for f in attrs.fields(cls))


def _summary(cls) -> str:
    doc = (cls.__doc__ or "").strip().splitlines()
    line = doc[0] if doc else ""
    return line.replace("|", "\\|")


def render() -> str:
    """The whole docs/ops.md page."""
    ops = library_ops()
    rows = []
    for opcode in sorted(ops):
        cls = ops[opcode]
        form = "composite" if issubclass(cls, Composite) else "instruction"
        rows.append(f"| `{opcode}` | `{cls.__module__}.{cls.__name__}` | {_fields(cls)} | "
                    f"{_kinds(cls)} | {form} | {_summary(cls)} |")
    # Every explained opcode, whether or not the installed XLA has it: the page is the
    # same whichever supported jaxlib renders it.
    missing = [op for op in sorted(set(xla_opcodes()) | set(UNCOVERED)) if op not in ops]
    uncovered = [f"| `{op}` | {UNCOVERED.get(op, '**not yet covered**')} |" for op in missing]
    return "\n".join([
        "# Ops",
        "",
        "Generated from `hlodsl.ops.registry()` by `python -m hlodsl.ops._catalog`; "
        "`tests/test_op_catalog.py` fails when this page and the registry disagree.",
        "",
        "Every op is a frozen attrs class whose fields are its static operands "
        "(see [defining ops](defining-ops.md)). *Element types* lists what the "
        "shape rule accepts where an op declares element-type kinds; elsewhere the "
        "shape rule states its constraints. A *composite* stages as an expression "
        "of other ops (XLA:CPU lacks the instruction, or none exists). Every op is "
        "tested eagerly and under `hd.compile` against jax.lax or numpy "
        "(`tests/test_ops*.py`).",
        "",
        f"## Registered ops ({len(ops)})",
        "",
        "| opcode | class | static operands | element types | form | summary |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"## XLA opcodes hlodsl does not offer ({len(missing)})",
        "",
        "Opcodes that exist only inside XLA's pipeline, or need dynamic shapes or "
        "host channels:",
        "",
        "| opcode | why |",
        "|---|---|",
        *uncovered,
        "",
    ])


if __name__ == "__main__":
    sys.stdout.write(render())
