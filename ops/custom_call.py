"""CustomCall: the escape hatch to a custom-call target registered with XLA.

A target is native code XLA calls by name (jaxlib's CPU backend registers
LAPACK targets such as ``lapack_spotrf_ffi``); its result type cannot be
inferred, so the caller states it as ``out_type``. XLA allocates exactly
that for the target to write: declared larger than what the target writes,
the rest is uninitialised memory; smaller, the target writes past it. Where
the code that calls a target knows what it writes, it registers a rule with
``register_custom_call_target`` (``hlodsl.stdlib.lapack`` does for jaxlib's
LAPACK kernels) and every call of that target is checked against it; any
other target is trusted as declared. ``backend_config`` passes the target's
attributes: for the typed FFI (the default ``api_version``, and
the one every jaxlib CPU target uses) a dict of scalars, written as the MLIR
dictionary XLA expects (``{"uplo": np.uint8(76)}`` -> ``{uplo = 76 : ui8}``);
for the legacy API versions an opaque string.

>>> import numpy as np
>>> from hlodsl.arrays.types import ArrayType, TupleType
>>> CustomCall("lapack_spotrf_ffi", (ArrayType(np.float32, (3, 3)), ArrayType(np.int32, ())),
...            {"uplo": np.uint8(ord("L"))}).backend_config
'{uplo = 76 : ui8}'
"""

from __future__ import annotations

import re
from typing import Callable

import attrs
import numpy as np

from hlodsl.errors import require
from hlodsl.ir.op import HloOp, frozen
from hlodsl.arrays.types import ArrayType, TokenType, TupleType

from ._checks import check_permutation, dims_text, flag

__all__ = ["CustomCall", "is_known_target", "register_custom_call_target"]

_API_VERSIONS = ("API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
                 "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI")
_TYPES = (ArrayType, TupleType, TokenType)


def _out_type(value):
    return TupleType(tuple(value)) if isinstance(value, (tuple, list)) else value


def _api_version(value) -> str:
    value = str(value).upper()
    return value if value.startswith("API_VERSION_") else f"API_VERSION_{value}"


def _attribute(value) -> str:
    """One typed-FFI attribute as MLIR text: ``76 : ui8``, ``true``, ``"text"``."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (int, np.integer)):
        dt = np.asarray(value).dtype if isinstance(value, np.integer) else np.dtype(np.int64)
        return f"{int(value)} : {'ui' if dt.kind == 'u' else 'i'}{dt.itemsize * 8}"
    if isinstance(value, (float, np.floating)) and np.isfinite(value):
        dt = np.asarray(value).dtype if isinstance(value, np.floating) else np.dtype(np.float64)
        return f"{float(value):.17e} : f{dt.itemsize * 8}"
    raise ValueError(f"CustomCall: a backend_config value must be a bool, int, finite "
                     f"float or str (numpy scalars fix the width), got {value!r}")


#: One ``name = value`` of typed-FFI attribute text, as ``_attribute`` writes it.
_ATTRIBUTE_TEXT = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|true|false|\S+ : [a-z]+\d+)')


def _parse_attribute(text: str):
    """The Python value of one attribute in ``_attribute``'s text (its inverse)."""
    if text.startswith('"'):
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    if text in ("true", "false"):
        return text == "true"
    number, kind = text.split(" : ")
    return float(number) if kind.startswith("f") else int(number)


def _config(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_attribute(v)}" for k, v in value.items()) + "}"
    return str(value)


def _result_layouts(value):
    if value is None:
        return None
    return tuple(None if v is None else tuple(int(d) for d in v) for v in value)


def _layouts(value):
    return None if value is None else tuple(tuple(int(d) for d in lay) for lay in value)


def _aliases(value):
    """``((output_index, operand, operand_index), ...)``, each index a tuple of ints."""
    if value is None:
        return None
    return tuple((tuple(int(i) for i in out), int(operand), tuple(int(i) for i in at))
                 for out, operand, at in value)


def _frontend_attributes(value):
    if value is None:
        return None
    items = value.items() if isinstance(value, dict) else value
    return tuple((str(k), str(v)) for k, v in items)


def _index_text(index) -> str:
    return "{" + ",".join(str(i) for i in index) + "}"


def _subtype(t, index: tuple):
    """The element of (nested) tuple type ``t`` at ``index`` (``()``: ``t`` itself)."""
    for i in index:
        if not isinstance(t, TupleType) or not 0 <= i < len(t.elements):
            return None
        t = t.elements[i]
    return t


@frozen
class CustomCall(HloOp, opcode="custom-call"):
    """Call the custom-call ``target`` on the operands; the result is ``out_type``.

    ``out_type`` is an ``ArrayType``, a ``TokenType``, or a tuple of them (a
    tuple result comes back as a tuple of arrays). ``operand_layouts`` gives
    each operand's minor-to-major layout when the target needs one (e.g.
    ``(0, 1)``: column-major); results keep the default row-major layout.
    A call with ``has_side_effect`` is never merged with an identical one.
    ``out_type`` is checked against what the target writes where a rule for
    it is registered (``register_custom_call_target``), and trusted otherwise.
    ``output_operand_aliases`` says which results the target writes in place
    of an operand's buffer: ``((output_index, operand, operand_index), ...)``,
    indices as tuples (``((0,), 0, ())``: result 0 of a tuple lives in operand
    0's buffer; ``((), 0, ())`` for a single result), each aliased result of
    its operand's type. ``frontend_attributes`` (a dict of strings) passes
    further attributes to XLA (jaxlib's GPU solvers read ``num_batch_dims``).
    """

    target: str
    out_type: ArrayType | TupleType | TokenType = attrs.field(converter=_out_type)
    backend_config: str = attrs.field(converter=_config, default="")
    has_side_effect: bool = attrs.field(converter=flag, default=False)
    api_version: str = attrs.field(converter=_api_version, default="API_VERSION_TYPED_FFI")
    operand_layouts: tuple[tuple[int, ...], ...] | None = attrs.field(
        converter=_layouts, default=None)
    result_layouts: tuple[tuple[int, ...] | None, ...] | None = attrs.field(
        converter=_result_layouts, default=None)
    output_operand_aliases: tuple | None = attrs.field(converter=_aliases, default=None)
    frontend_attributes: tuple[tuple[str, str], ...] | None = attrs.field(
        converter=_frontend_attributes, default=None)

    def __attrs_post_init__(self):
        if not isinstance(self.target, str):
            raise TypeError(f"{self!r}: target must be the name (a str) of a custom-call "
                            f"target, got {type(self.target).__name__}")
        if not self.target:
            raise ValueError(f"{self!r}: target must be the name of a custom-call target")
        types = self.out_type.elements if isinstance(self.out_type, TupleType) else (self.out_type,)
        if not isinstance(self.out_type, _TYPES) or not all(isinstance(t, _TYPES) for t in types):
            raise TypeError(f"{self!r}: out_type must be an ArrayType, TokenType or a tuple "
                            "of them (a custom call's result type cannot be inferred)")
        if self.api_version not in _API_VERSIONS:
            raise ValueError(f"{self!r}: api_version must be one of {_API_VERSIONS}")
        typed = self.api_version == "API_VERSION_TYPED_FFI"
        if typed and self.backend_config and not (self.backend_config.startswith("{")
                                                  and self.backend_config.endswith("}")):
            raise ValueError(f"{self!r}: a typed-FFI backend_config is a dict of attributes "
                             "(or its MLIR text '{name = value : type, ...}')")
        for layout in self.operand_layouts or ():
            check_permutation(self, layout)
        if self.result_layouts is not None:
            arrays = [t for t in types if isinstance(t, ArrayType)]
            if len(self.result_layouts) != len(arrays):
                raise ValueError(f"{self!r}: result_layouts needs one layout (or None) per "
                                 f"array of out_type, {len(arrays)}")
            for t, layout in zip(arrays, self.result_layouts):
                if layout is not None:
                    check_permutation(self, layout)
                    if len(layout) != t.rank:
                        raise ValueError(f"{self!r}: layout {layout} does not fit {t}")

    @property
    def interned(self) -> bool:
        return not self.has_side_effect

    @property
    def ffi_attributes(self) -> dict:
        """The typed-FFI attributes of ``backend_config`` as Python values (ints, floats,
        bools, strs); empty for the legacy API versions, whose config is opaque.

        >>> CustomCall("t", ArrayType(np.float32, ()), {"uplo": np.uint8(76)}).ffi_attributes
        {'uplo': 76}
        """
        if self.api_version != "API_VERSION_TYPED_FFI":
            return {}
        return {name: _parse_attribute(value)
                for name, value in _ATTRIBUTE_TEXT.findall(self.backend_config)}

    def result_type(self, *types):
        rule = _TARGET_RULES.get(self.target)
        if rule is not None:
            self._check_target_results(rule, types)
        if self.operand_layouts is not None:
            require(len(self.operand_layouts) == len(types), self, types,
                    f"operand_layouts has {len(self.operand_layouts)} layouts for "
                    f"{len(types)} operands")
            for i, (t, layout) in enumerate(zip(types, self.operand_layouts)):
                require(isinstance(t, ArrayType) and t.rank == len(layout), self, types,
                        f"operand {i} ({t}) does not fit the rank-{len(layout)} layout {layout}")
        for out, operand, at in self.output_operand_aliases or ():
            written = _subtype(self.out_type, out)
            given = _subtype(types[operand], at) if 0 <= operand < len(types) else None
            require(written is not None and written == given, self, types,
                    f"output_operand_aliases: result {_index_text(out)} ({written}) must "
                    f"have the type of operand {operand} {_index_text(at)} ({given}), whose "
                    "buffer it is written into")
        return self.out_type

    def _check_target_results(self, rule: Callable, types) -> None:
        try:
            writes = rule(types, self.ffi_attributes, self.out_type) \
                if rule in _DECLARED else rule(types, self.ffi_attributes)
        except ValueError as e:  # the rule's way of saying the target cannot take these
            require(False, self, types, f"{self.target}: {e}")
        require(writes == self.out_type, self, types,
                f"{self.target} writes {writes} for these operands, but out_type declares "
                f"{self.out_type}: a larger result would hold uninitialised memory, a "
                "smaller one would be written past")

    def result_hlo(self, result_type) -> str:
        """The result type as the instruction declares it, layouts included."""
        if self.result_layouts is None:
            return result_type.hlo
        layouts = iter(self.result_layouts)

        def one(t):
            if not isinstance(t, ArrayType):
                return t.hlo
            layout = next(layouts)  # (a scalar's layout is not printed, as XLA prints it)
            return t.hlo if layout is None or not t.rank else t.hlo + dims_text(layout)

        if isinstance(result_type, TupleType):
            return "(" + ", ".join(one(t) for t in result_type.elements) + ")"
        return one(result_type)

    def attributes(self, operand_types, result_type, ctx):
        target = self.target.replace("\\", "\\\\").replace('"', '\\"')
        out = [f'custom_call_target="{target}"']
        if self.operand_layouts is not None:
            shapes = [t.hlo + dims_text(lay) for t, lay in zip(operand_types, self.operand_layouts)]
            out.append("operand_layout_constraints={" + ", ".join(shapes) + "}")
        if self.output_operand_aliases:
            pairs = ", ".join(f"{_index_text(o)}: ({k}, {_index_text(a)})"
                              for o, k, a in self.output_operand_aliases)
            out.append("output_to_operand_aliasing={" + pairs + "}")
        if self.has_side_effect:
            out.append("custom_call_has_side_effect=true")
        out.append(f"api_version={self.api_version}")
        if self.frontend_attributes:
            items = ",".join(f'{k}="{_escaped(v)}"' for k, v in self.frontend_attributes)
            out.append("frontend_attributes={" + items + "}")
        if self.api_version == "API_VERSION_TYPED_FFI":
            if self.backend_config:
                out.append(f"backend_config={self.backend_config}")
        elif self.backend_config:
            out.append(f'backend_config="{_escaped(self.backend_config)}"')
        return out


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


# -- targets whose results are known ----------------------------------------------------
# Filled from above (ops never imports stdlib): the module that calls a target states,
# once, what the target writes, and every CustomCall of it is checked against that.

_TARGET_RULES: dict[str, Callable] = {}
_DECLARED: set = set()  # the rules that also read the declared out_type


def register_custom_call_target(target: str, rule: Callable, *, declared: bool = False) -> None:
    """Check every ``CustomCall`` of ``target`` against what ``rule`` says it writes.

    ``rule(operand_types, attributes)`` gets the operands' ``ArrayType``s and the
    call's typed-FFI attributes (``CustomCall.ffi_attributes``) and returns the
    result type the target writes for them (an ``ArrayType`` or a ``TupleType``),
    or raises ``ValueError`` saying which operand or attribute the target cannot
    take. A call whose ``out_type`` differs, or whose operands the rule refuses,
    is a ``ShapeError`` naming the call. Registering a target again replaces
    its rule. With ``declared=True`` the rule is called as ``rule(operand_types,
    attributes, out_type)``: for a target whose result is not a function of its
    operands alone (a size the caller chooses, an optional result), it checks
    the declared type and returns what the target writes for it.

    >>> f32 = ArrayType(np.float32, (2,))
    >>> register_custom_call_target("in_place_kernel", lambda types, attributes: types[0])
    >>> CustomCall("in_place_kernel", f32).result_type(f32) == f32
    True
    >>> del _TARGET_RULES["in_place_kernel"]
    """
    _TARGET_RULES[target] = rule
    (_DECLARED.add if declared else _DECLARED.discard)(rule)


def is_known_target(target: str) -> bool:
    """Whether a rule says what ``target`` writes (``register_custom_call_target``): the
    targets hlodsl calls itself, which ``hlodsl.import_hlo`` imports.

    >>> is_known_target("no_such_kernel")
    False
    """
    return target in _TARGET_RULES


# -- derivatives (hlodsl.ir.rules, used by hlodsl.transforms) ------------------------------------------------

from hlodsl.ir.rules import vjp_rule  # noqa: E402


@vjp_rule.dispatch
def custom_call_vjp(op: CustomCall, ct, out, *args):
    raise NotImplementedError(
        f"no derivative rule for {op!r} (operand types "
        f"{', '.join(str(a.type) for a in args)}): a custom-call target is opaque native "
        "code; wrap the function that calls it in hlodsl.custom_vjp (or custom_jvp) and "
        "give its derivative there")


# -- batching (vmap) --------------------------------------------------------------------


from hlodsl.ir.rules import not_batchable  # noqa: E402

not_batchable(CustomCall, reason=(
    "a custom call is opaque: hlodsl cannot know what its target does with an extra "
    "dimension. Give a rule for it: subclass CustomCall for your target and define "
    "@hlodsl.batch_rule.dispatch for the subclass (args arrive with the batch dimension "
    "first, or None where unbatched; return (result, result dims))"))
