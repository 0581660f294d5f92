"""Compiling staged programs and calling them: ``hd.compile``, its call plans, eager op
calls.

| module | what it holds |
|---|---|
| ``compiler`` | ``hd.compile``: one executable per signature, bounded cache, the recompile warning, ``explain`` |
| ``call`` | the call plan of a compiled function: arguments to buffers and back, donation |
| ``walkers`` | code written per structure of a nested argument (and of nested results) for the call plan |
| ``bindings`` | globals and closure variables whose rebinding must recompile |
| ``signature`` | what a compile signature holds for each argument, by name and path |
| ``one_op`` | eager op calls: the compiled one-op module of an op, handed to ``hlodsl.ir.op`` |
| ``argument_shardings`` | ``compile``'s ``in_shardings``/``out_shardings`` matched to argument leaves |

May import: hlodsl.ir, hlodsl.arrays, hlodsl.runtime, and the top of hlodsl (``errors``,
``settings``, ``cache``, ``context``). Nothing above this room (docs/index.md draws the
floors).
"""
