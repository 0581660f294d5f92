"""Looking at programs: ``hd.code_typed``, ``hd.code_hlo`` (terminal and Jupyter),
``hd.profile``, and reading XLA's HLO text.

| module | what it holds |
|---|---|
| ``introspect`` | ``hd.code_typed`` and ``hd.code_hlo`` |
| ``introspect_html`` | their rich HTML in Jupyter |
| ``profiler`` | ``hd.profile``: measured time by source line and by instruction |
| ``hlo_text`` | a parser of XLA's HLO text (optimised modules, and programs ``hd.import_hlo`` reads) |
| ``hlo_validation`` | HLO text from outside checked in Python before XLA's parser reads it (``hd.import_hlo``) |
| ``hlo_graph`` | an HLO computation drawn as a Graphviz graph |

May import: hlodsl.compilation, hlodsl.ir, hlodsl.arrays, hlodsl.runtime, and the top of
hlodsl (``errors``, ``settings``, ``cache``, ``context``). Nothing above this room
(docs/index.md draws the floors).
"""
