"""Several devices and processes: ``hd.replicated``, ``hd.distributed``, reading a
cluster's environment.

| module | what it holds |
|---|---|
| ``replicated`` | ``hd.replicated(f, n)``: one staged program run on n devices (replicas or SPMD partitions) |
| ``distributed`` | ``hd.distributed``: joining several processes into one program |
| ``clusters`` | what a launcher (SLURM, MPI, ``hlodsl.launch``) says about the processes, checked |
| ``rendezvous`` | the processes meet in plain Python before jax joins them: a missing one is an exception |

May import: hlodsl.ir, hlodsl.arrays, hlodsl.runtime, and the top of hlodsl (``errors``,
``settings``, ``cache``, ``context``). Nothing above this room (docs/index.md draws the
floors).
"""
