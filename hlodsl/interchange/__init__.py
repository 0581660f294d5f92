"""Programs and values in and out of a process: exported artifacts and checkpoints.

| module | what it holds |
|---|---|
| ``exported`` | ``hd.export``/``hd.deserialize``: a staged program as versioned bytes holding a StableHLO artifact |
| ``export_checks`` | what ``hd.deserialize`` checks: every metadata field, and the types against the program's own |
| ``tree_json`` | the structures, static values and array types an exported program keeps, as JSON |
| ``checkpoint`` | ``hd.save``/``hd.load``: structures of arrays and values in a file |

May import: hlodsl.compilation, hlodsl.ir, hlodsl.arrays, hlodsl.runtime, and the top of
hlodsl (``errors``, ``settings``, ``cache``, ``context``). Nothing above this room
(docs/index.md draws the floors).
"""
