"""Types and literals of StableHLO's test files as hlodsl element types and numpy arrays.

``tensor<2x3xf32>`` becomes ``((2, 3), hd.float32)``; ``dense<...>`` (nested
lists, splats, complex ``(re, im)`` pairs, booleans, hex bit patterns such as
``0x7F800000`` for an f32 infinity, and whole-buffer hex ``dense<"0x...">``)
becomes a numpy array of the element type's numpy dtype (ml_dtypes for bf16,
the float8 types and 2/4-bit integers).

>>> dense("dense<[1, 0x7FC00000]>", "tensor<2xf32>")
array([ 1., nan], dtype=float32)
>>> dense("dense<(1.0, -2.0)>", "tensor<2xcomplex<f32>>")
array([1.-2.j, 1.-2.j], dtype=complex64)
"""

from __future__ import annotations

import re

import numpy as np

import hlodsl as hd

__all__ = ["ELEMENT_TYPES", "Unsupported", "dense", "element", "int_list", "tensor_type"]


class Unsupported(Exception):
    """A case the replay cannot run: ``kind`` is ``unsupported-type`` or ``unsupported-op``."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


ELEMENT_TYPES = {
    "i1": hd.pred, "i2": hd.int2, "i4": hd.int4, "i8": hd.int8, "i16": hd.int16,
    "i32": hd.int32, "i64": hd.int64, "ui2": hd.uint2, "ui4": hd.uint4, "ui8": hd.uint8,
    "ui16": hd.uint16, "ui32": hd.uint32, "ui64": hd.uint64, "f16": hd.float16,
    "bf16": hd.bfloat16, "f32": hd.float32, "f64": hd.float64,
    "complex<f32>": hd.complex64, "complex<f64>": hd.complex128,
    "f8E4M3FN": hd.float8_e4m3fn, "f8E5M2": hd.float8_e5m2,
    "f8E4M3FNUZ": hd.float8_e4m3fnuz, "f8E5M2FNUZ": hd.float8_e5m2fnuz,
    "f8E4M3B11FNUZ": hd.float8_e4m3b11fnuz, "f8E3M4": hd.float8_e3m4,
    "f8E4M3": hd.float8_e4m3, "f8E8M0FNU": hd.float8_e8m0fnu,
    "f4E2M1FN": hd.float4_e2m1fn, "f6E2M3FN": hd.float6_e2m3fn, "f6E3M2FN": hd.float6_e3m2fn,
}


def element(name: str):
    """The hlodsl element type for an MLIR element type name, or ``Unsupported``."""
    name = name.strip()
    if name in ELEMENT_TYPES:
        return ELEMENT_TYPES[name]
    if name.startswith("!quant"):
        raise Unsupported("unsupported-type", f"quantized type {name}")
    if name.startswith("!stablehlo.token"):
        raise Unsupported("unsupported-op", "tokens as values")
    raise Unsupported("unsupported-type", f"element type {name}")


def tensor_type(text: str):
    """``(shape, element type)`` of ``tensor<...>``; a list of those for ``tuple<...>``."""
    text = text.strip()
    if text.startswith("tuple<"):
        from stablehlo_replay_parser import _split_top
        inner = text[len("tuple<"):-1]
        return [tensor_type(t) for t in _split_top(inner)] if inner.strip() else []
    if text.startswith("!"):
        return ((), element(text))
    m = re.fullmatch(r"tensor<((?:[\d?]+x)*)(.+?)(,\s*#.*)?>", text, re.DOTALL)
    if not m:
        return ((), element(text))  # a scalar type such as i64 in a region's arguments
    dims = [d for d in m.group(1).split("x") if d]
    if "?" in dims:
        raise Unsupported("unsupported-op", "dynamic shapes (hlodsl shapes are static)")
    if m.group(3):
        raise Unsupported("unsupported-op", f"tensor encoding {m.group(3).strip(', ')}")
    return tuple(int(d) for d in dims), element(m.group(2))


def int_list(text: str) -> tuple[int, ...]:
    """``[1, 2]``, ``array<i64: 1, 2>`` or ``dense<[1, 2]> : tensor<2xi64>`` as ints."""
    text = re.sub(r"^array<i\d+:?|^dense<", "", text.strip())
    text = re.sub(r">\s*(:.*)?$", "", text)
    return tuple(int(v) for v in re.findall(r"-?\d+", text))


_TOKEN = re.compile(r"\s*(\[|\]|\(|\)|,|true|false|[-+]?0x[0-9A-Fa-f]+|"
                    r"[-+]?(?:inf|nan)|[-+]?[\d.]+(?:[eE][-+]?\d+)?)")


def _nested(text: str):
    """Python lists of the literal's scalars; a complex pair is a 2-tuple."""
    pos, stack, cur = 0, [], []
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot read dense literal at {text[pos:pos + 20]!r}")
        tok, pos = m.group(1), m.end()
        if tok in "[(":
            stack.append(cur)
            cur = []
        elif tok in "])":
            done = cur if tok == "]" else ("pair", cur)
            cur = stack.pop()
            cur.append(done)
        elif tok != ",":
            cur.append(tok)
    return cur[0] if len(cur) == 1 else cur


def _shape_of(value) -> tuple[int, ...]:
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return tuple(shape)


def _flat(value) -> list:
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]


def _scalar(tok: str, dtype: np.dtype, complex_part: np.dtype | None = None):
    """One scalar token as a Python value of ``dtype`` (hex: the bit pattern)."""
    target = complex_part or dtype
    if tok in ("true", "false"):
        return tok == "true"
    if tok.lower().lstrip("+-").startswith("0x") and target.kind in "fcV" and target != np.bool_:
        bits = int(tok, 16)
        unsigned = np.dtype(f"u{target.itemsize}") if target.itemsize > 1 else np.dtype("u1")
        return np.array(bits, dtype=unsigned).view(target)[()]
    if tok.lower().lstrip("+-").startswith("0x"):
        return int(tok, 16)
    if dtype.kind in "iub" or (dtype.kind == "V" and "int" in dtype.name):
        return int(tok)
    return float(tok)


def dense(literal: str, type_text: str) -> np.ndarray:
    """The numpy array of a ``dense<...>`` literal of type ``type_text``."""
    shape, etype = tensor_type(type_text)
    dtype = np.dtype(etype.np_dtype)
    body = literal.strip()[len("dense<"):-1].strip()
    if body.startswith('"0x'):
        raw = bytes.fromhex(body[3:-1])
        size = int(np.prod(shape))
        if dtype == np.bool_:
            values = np.frombuffer(raw, np.uint8).astype(bool)
        else:
            values = np.frombuffer(raw, dtype)
        if values.size == 1 and size != 1:
            values = np.repeat(values, size)
        return values.reshape(shape).copy()
    value = _nested(body)
    part = np.dtype(np.float32 if dtype == np.complex64 else np.float64) if dtype.kind == "c" \
        else None

    def convert(v):
        if isinstance(v, tuple):
            re_, im = (_scalar(t, dtype, part) for t in v[1])
            return complex(float(re_), float(im))
        return _scalar(v, dtype)

    flat = [convert(v) for v in _flat(value)]
    if dtype.kind in "iu":
        out = np.array([int(v) for v in flat], dtype=object).astype(dtype)
    else:
        # Each scalar already has dtype's value (a hex pattern was read as dtype itself).
        out = np.array([np.array(v).astype(dtype) if isinstance(v, np.generic) else v
                        for v in flat], dtype=object)
        out = np.array([np.asarray(v).astype(dtype)[()] for v in out], dtype=dtype)
    if isinstance(value, list):
        literal_shape = _shape_of(value)
        if literal_shape != shape and int(np.prod(literal_shape)) != int(np.prod(shape)):
            raise ValueError(f"dense literal of shape {literal_shape} for {type_text}")
        return out.reshape(shape)
    return np.full(shape, out[0], dtype=dtype)
