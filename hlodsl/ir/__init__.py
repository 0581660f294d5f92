"""The staged program: its IR, the op base class and the rule generics, staging,
interpretation and printing as HLO text.

| module | what it holds |
|---|---|
| ``graph`` | ``Node`` (interned), ``Builder``, ``Computation``; ``OPCODES`` |
| ``op`` | ``HloOp``, the base of every op; ``frozen``; ``Composite``; the op registry |
| ``rules`` | the rule generics ``vjp_rule``, ``jvp_rule``, ``batch_rule`` (declared here, filled by ``hlodsl.ops``) |
| ``structural`` | the ops staging itself creates: ``Parameter``, ``Constant``, ``Tuple``, ``GetTupleElement`` |
| ``dispatcher`` | the project's one plum ``Dispatcher``, ``hd.dispatch`` |
| ``staging`` | ``stage`` (a whole function on symbolic arrays) and ``stage_computation`` |
| ``interpret`` | running a ``Computation`` node by node: ``evaluate``, ``replay`` |
| ``printer`` | HLO module text: entry computation plus deduplicated sub-computations, with source metadata |
| ``literals`` | how a numpy array is spelled as an HLO text literal |
| ``target`` | the platform being staged for: ``target_platform``, ``staging_platform`` |

May import: hlodsl.arrays, hlodsl.runtime, and the top of hlodsl (``errors``,
``settings``, ``cache``, ``context``). Nothing above this room (docs/index.md draws the
floors).
"""
