"""hlodsl benchmarks: hlodsl and its peers (jax.jit, jax eager, numpy) side by side.

Run ``python -m benchmarks`` (add ``--quick`` for a smoke run, ``--models``
for the VGG19 and small-CNN rows of ``benchmarks/vgg19.py``, which take
minutes) from the repository root; it prints a Markdown table with hlodsl's time, the peer's
time and the ratio hlodsl / peer for every case. ``run(quick)`` returns the
rows as dicts, for tests and scripts. See docs/benchmarks.md.
"""

from __future__ import annotations

import jax

# The peers run with x64 on, as the float64 rows need (hlodsl leaves jax's flag alone):
# both sides of every row run under the same setting.
jax.config.update("jax_enable_x64", True)

from .report import machine, table  # noqa: E402
from .timing import settings  # noqa: E402

__all__ = ["run", "table", "machine"]


def run(quick: bool = False, models: bool = False, torch_compile: bool = True) -> list[dict]:
    """Measure every case; one dict per row (times in seconds, see ``foundation.row``).

    ``models`` adds the model rows (``benchmarks/vgg19.py``: VGG19 against
    jax.jit and PyTorch, minutes on two cores); ``torch_compile`` includes
    ``torch.compile`` among their peers.
    """
    from . import autodiff, control_flow, foundation, linalg, numpy_workload, vmap, workloads

    cfg = settings(quick)
    rows: list[dict] = []
    for case in (foundation.ALL + autodiff.ALL + control_flow.ALL + numpy_workload.ALL
                 + vmap.ALL + workloads.ALL + linalg.ALL):
        rows.extend(case(cfg))
    if models:
        from . import vgg19

        rows.extend(vgg19.forward(cfg, torch_compile=torch_compile))
        for case in vgg19.ALL[1:]:
            rows.extend(case(cfg))
    return rows
