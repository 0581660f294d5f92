"""Arrays and their types: element types, ``Array[T, Shape]``, structure mapping, devices
and shardings.

| module | what it holds |
|---|---|
| ``dtypes`` | XLA element types as classes (``float32``, ``bfloat16``, ``pred``, ...) under an abstract hierarchy usable in dispatch signatures |
| ``types`` | ``ArrayType``, ``TupleType``, ``TokenType``: the abstract values shape rules take and return |
| ``array`` | ``Array[T, Shape]`` (concrete or symbolic), ``hd.array``, the aliases ``Scalar``, ``Vector``, ``Matrix`` |
| ``scalars`` | Python numbers as arrays: traced scalars and the constants buffer calls share |
| ``host_values`` | an array's host value (``numpy``, ``__array__``, ``tolist``) |
| ``tree`` | structure mapping: ``flatten``/``unflatten`` of tuples, lists, dicts, attrs instances and registered classes of arrays; ``static_key`` |
| ``pytrees`` | ``hd.register_pytree_node``, ``hd.register_dataclass``: user classes as structures |
| ``devices`` | ``hd.Device`` and ``Shard`` |
| ``placement`` | an array's ``.device``, ``.sharding``, shards and DLPack |
| ``sharding`` | ``Mesh``, ``PartitionSpec``, ``NamedSharding``, ``sharding_of`` |

May import: hlodsl.runtime, and the top of hlodsl (``errors``, ``settings``, ``cache``,
``context``). Nothing above this room (docs/index.md draws the floors).
"""
