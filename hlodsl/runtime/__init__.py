"""The runtime: PJRT through jaxlib, and the only package of hlodsl that imports jax.

jax is used here as a runtime only: its PJRT client compiles the HLO text we
emit, and jax ``Array`` objects serve as device buffers. Nothing of jax's
tracing, ``jit``, ``lax`` or ``numpy`` implements any part of hlodsl (the one
exception is a bridge: ``jax_programs.lower_jax`` lowers a *user's* jax function
for ``hd.from_jax``, and ``jax_derivatives`` asks jax for that function's
derivatives). Every call that reaches a private jax/jaxlib name goes
through ``jaxlib_compat``, which probes each once (checked on jax/jaxlib
0.10.2, 0.11.2 and 0.12.0.1).

What it holds, by concern:

| module | what it holds |
|---|---|
| ``client`` | the PJRT client (backend, platform, devices, free memory, versions), the fork guard |
| ``buffers`` | device buffers: host data in (copied) and out, DLPack |
| ``executables`` | compiling HLO text with hlodsl's XLA options, running executables, errors |
| ``program_options`` | XLA options chosen per program from its text (YNNPACK reductions for split reductions on XLA:CPU) |
| ``lapack`` | binding jaxlib's LAPACK kernels before a program calls them |
| ``host_callbacks`` | programs that call Python: the custom-call target per platform, running them |
| ``cuda`` | what jax's CUDA plugin offers: cuSOLVER targets, cuSOLVER/cuDNN versions, compute capability |
| ``artifacts`` | StableHLO portable artifacts (``hd.export``/``hd.deserialize``) |
| ``sharded`` | sharded buffers and SPMD-partitioned programs over a mesh |
| ``processes`` | several processes: PJRT's distributed runtime |
| ``jax_programs`` | HLO text of jax's programs and of StableHLO (``hd.import_hlo``, ``hd.from_jax``) |
| ``isolated`` | StableHLO from outside read in a child process (``reader_worker``): no input crashes the caller |
| ``jax_derivatives`` | jax's own derivatives of a user's jax function, to lower (``hd.from_jax``) |
| ``disk_cache`` | the persistent cache of compiled executables |
| ``jaxlib_compat`` | every private jax/jaxlib name hlodsl uses, probed once with a fallback |

The package's namespace gathers the functions the rest of hlodsl calls
(``from hlodsl import runtime``; ``runtime.compile_hlo(text)``).

May import: the top of hlodsl (``errors``, ``settings``, ``cache``, ``context``)
and nothing else of hlodsl: every other room stands on this one. It hands
``settings`` the host's or device's free memory (``memory_limit="auto"``).

>>> exe = compile_hlo('''HloModule m
... ENTRY e {
...   ROOT c = f32[2] constant({1, 2})
... }''')
>>> [to_host(b) for b in exe.execute([])]
[array([1., 2.], dtype=float32)]
"""

from __future__ import annotations

import os

# XLA's C++ logging would print device banners on every start; keep warnings.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from .client import (  # noqa: E402
    backend, check_process, device_count, free_memory, hlo_opcode_enum_names, platform,
    started, versions,
)
from .buffers import (  # noqa: E402
    adopt, copy_buffer, device_index, dlpack_device, from_dlpack, is_buffer, is_deleted,
    to_device, to_dlpack, to_host, wait,
)
from .executables import (  # noqa: E402
    COMPILER_OPTIONS, Executable, compile_hlo, compiler_options, cost_analysis,
    extra_compiler_options, release_host_memory, stats,
)
from .lapack import lapack_kernels  # noqa: E402
from .program_options import PROGRAM_RULES, program_options  # noqa: E402
from .host_callbacks import callback_target  # noqa: E402
from .cuda import compute_capability, cudnn_version, cusolver_kernels, cusolver_version  # noqa: E402
from .artifacts import artifact_mlir_text, artifact_module, portable_artifact  # noqa: E402
from .sharded import (  # noqa: E402
    PARTITIONER, compile_partitioned, from_process_local_data, is_fully_addressable,
    is_sharded, jax_sharding, named_layout, output_blocks, partitioned_executor, put_sharded,
    readable, replicate_on, shards,
)
from .processes import (  # noqa: E402
    initialize_distributed, local_device_ids, process_count, process_index,
    shutdown_distributed,
)
from .jax_programs import (  # noqa: E402
    check_hlo_text, computation_text, flat_jax, jax_specs, jax_stage_text, lower_flat,
    lower_jax, stablehlo_text,
)
from .isolated import (  # noqa: E402
    StableHloReading, UntrustedInputError, artifact_mlir_text_isolated, read_stablehlo,
    reader_pid,
)
from .jax_derivatives import (  # noqa: E402
    JaxDerivativeError, inexact, jvp_program, lower_derivative, residual_programs, vjp_program,
)
from .jaxlib_compat import asked_by_jax_operator  # noqa: E402

from hlodsl import settings as _settings  # noqa: E402

_settings.use_free_memory(free_memory)  # memory_limit="auto" (settings sits below the runtime)

__all__ = [
    "backend", "platform", "device_count", "versions", "hlo_opcode_enum_names", "started",
    "check_process", "to_device", "to_host", "is_buffer", "adopt", "copy_buffer",
    "is_deleted", "wait", "device_index", "to_dlpack", "dlpack_device", "from_dlpack",
    "Executable", "compile_hlo", "stats", "COMPILER_OPTIONS", "compiler_options",
    "PROGRAM_RULES", "program_options",
    "extra_compiler_options", "release_host_memory", "cost_analysis", "lapack_kernels",
    "callback_target", "cusolver_kernels",
    "cusolver_version", "cudnn_version", "compute_capability", "free_memory",
    "portable_artifact",
    "artifact_module", "artifact_mlir_text", "PARTITIONER", "jax_sharding", "put_sharded",
    "is_sharded", "named_layout", "shards", "is_fully_addressable", "readable",
    "replicate_on", "compile_partitioned", "output_blocks", "partitioned_executor",
    "from_process_local_data", "initialize_distributed", "shutdown_distributed",
    "process_index", "process_count", "local_device_ids", "computation_text",
    "stablehlo_text", "check_hlo_text", "lower_jax", "jax_stage_text", "flat_jax",
    "lower_flat", "jax_specs", "JaxDerivativeError", "inexact", "jvp_program", "vjp_program",
    "residual_programs", "lower_derivative", "read_stablehlo", "StableHloReading",
    "UntrustedInputError", "reader_pid", "artifact_mlir_text_isolated",
    "asked_by_jax_operator",
]
