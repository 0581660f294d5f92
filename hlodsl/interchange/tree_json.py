"""Structures of exported programs as JSON: what an ``Exported`` keeps of its arguments'
and results' trees, static values and array types, so that a process without the Python
source of the exported function can call it (hlodsl.interchange.exported).

>>> import hlodsl as hd
>>> _type_json(hd.ArrayType(hd.float32, (2, 3)))
{'dtype': 'float32', 'shape': [2, 3]}
>>> _type_from_json(_type_json(hd.ArrayType(hd.float32, (2, 3))))
ArrayType(float32, (2, 3))
"""

from __future__ import annotations

import inspect

import attrs

from hlodsl.arrays.dtypes import element_type
from hlodsl.arrays.pytrees import NODES
from hlodsl.arrays.tree import LEAF, PYTREE, _Static
from hlodsl.arrays.types import ArrayType
from hlodsl.errors import ExportError

# -- structures as JSON -------------------------------------------------------------
# An exported program is called without the Python that made it, so its structures
# are the ones JSON can say: tuples, lists, dicts with string keys, arrays (by type),
# and static values that JSON holds exactly (floats as hex, so -0.0 and nan survive);
# a registered class (hd.register_pytree_node) by its name and its aux data as JSON,
# found again by name among the classes the loading process registered.

def _static_json(value, where: str, name: str):
    if value is None or type(value) in (bool, int, str):
        return {"static": value}
    if type(value) is float:
        return {"float": value.hex()}
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise ExportError(
        f"export({name}): {where} is a static {type(value).__name__} value ({shown}), which "
        "an exported program cannot keep: it is called without the Python source, so "
        "non-array values must be None, bool, int, float or str (pass other values as "
        "arrays, or bind them into the function with functools.partial)")


def _tree_json(td, where: str, name: str):
    """The JSON of a treedef; ``where`` names the place in errors."""
    if td is LEAF:
        return "array"
    if isinstance(td, _Static):
        return _static_json(td.value, where, name)
    kind = td[0]
    if kind is tuple or kind is list:
        return {kind.__name__: [_tree_json(c, f"{where}[{i}]", name)
                                for i, c in enumerate(td[1])]}
    if kind is dict and len(td) == 3:
        return {"dict": [[k, _tree_json(c, f"{where}[{k!r}]", name)]
                         for k, c in zip(td[1], td[2])]}
    if kind is PYTREE:
        node = td[1]
        return {"node": node.name, "aux": _aux_json(td[2].value, where, node, name),
                "children": [_tree_json(c, node.child_path(where, i), name)
                             for i, c in enumerate(td[3])]}
    what = ("a dict with non-string keys" if kind is dict else
            f"a {(td[1] if kind is attrs else kind).__name__} instance")
    raise ExportError(
        f"export({name}): {where} is {what}; an exported program is called without the "
        "Python source, so its arguments and results are arrays in tuples, lists, "
        "dicts with string keys and registered classes (hd.register_dataclass, "
        "hd.register_pytree_node; attrs.asdict or namedtuple._asdict turn a class into a dict)")


def _aux_json(aux, where: str, node, name: str):
    """A registered node's aux data as JSON: None, bool, int, str, float and tuples."""
    if type(aux) is tuple:
        return {"tuple": [_aux_json(v, where, node, name) for v in aux]}
    if aux is None or type(aux) in (bool, int, str):
        return {"static": aux}
    if type(aux) is float:
        return {"float": aux.hex()}
    raise ExportError(
        f"export({name}): {where} is a {node.cls.__qualname__}, whose aux data holds a "
        f"{type(aux).__name__} ({aux!r:.40}); an exported program keeps aux data as JSON: "
        "None, bool, int, float, str and tuples of those")


def _aux_from_json(j):
    if "tuple" in j:
        return tuple(_aux_from_json(v) for v in j["tuple"])
    return float.fromhex(j["float"]) if "float" in j else j["static"]


def _node_named(name: str):
    """The registered class an exported program names."""
    for node in list(NODES.values()):
        if node.name == name:
            return node
    raise ExportError(
        f"deserialize: the program's arguments or results hold a {name}, a class registered "
        "as a pytree where it was exported; register it in this process too (import the "
        "module that calls hd.register_dataclass / hd.register_pytree_node) before "
        "deserializing")


def _in_tree_json(tree, params: list[str], name: str):
    """The JSON of the treedef of ``(args, kwargs)``, errors naming arguments by name."""
    args_td, kwargs_td = tree[1]
    args = [_tree_json(c, "argument " + (params[i] if i < len(params) else f"args[{i}]"), name)
            for i, c in enumerate(args_td[1])]
    kwargs = [[k, _tree_json(c, f"argument {k}", name)] for k, c in zip(kwargs_td[1], kwargs_td[2])]
    return {"tuple": [{"tuple": args}, {"dict": kwargs}]}


def _positional_names(fn, n: int) -> list[str]:
    """Names of ``fn``'s first ``n`` positional arguments (``args[i]`` for ``*args``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            names += [f"{p.name}[{j}]" for j in range(n - len(names))]
    return names


def _tree_from_json(j):
    if j == "array":
        return LEAF
    if "static" in j:
        return _Static(j["static"])
    if "float" in j:
        return _Static(float.fromhex(j["float"]))
    if "tuple" in j or "list" in j:
        kind = tuple if "tuple" in j else list
        return (kind, tuple(_tree_from_json(c) for c in j[kind.__name__]))
    if "node" in j:
        return (PYTREE, _node_named(j["node"]), _Static(_aux_from_json(j["aux"])),
                tuple(_tree_from_json(c) for c in j["children"]))
    keys = tuple(k for k, _ in j["dict"])
    return (dict, keys, tuple(_tree_from_json(c) for _, c in j["dict"]))


def _type_json(t: ArrayType) -> dict:
    return {"dtype": t.dtype.np_dtype.name, "shape": list(t.shape)}


def _type_from_json(j: dict) -> ArrayType:
    return ArrayType(element_type(j["dtype"]), tuple(j["shape"]))
