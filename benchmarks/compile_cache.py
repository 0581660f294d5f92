"""The persistent compile cache, measured: VGG19's forward pass, first call in a fresh
process, with an empty cache (cold) and with the cache the first process filled (warm).

Each run is a new interpreter (``HLODSL_CACHE_DIR`` a fresh temporary directory per
pair); the time is from just before the first call to its result, imports and
parameter initialisation excluded, split into getting ready (staging, and XLA's
compile or the cache's load) and the rest (running the forward pass once, which
the cache cannot shorten: the last column times a later call). ``python -m benchmarks.compile_cache [--pairs N]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

__all__ = ["first_call", "run"]

CHILD = r"""
import json, time, numpy as np, hlodsl as hd
from hlodsl import runtime
from hlodsl.stdlib import models, nn
params = models.vgg19_init(nn.key(0))
for leaf in hd.tree_leaves(params):  # initialisation runs asynchronously: wait for it
    np.asarray(leaf)
x = hd.array(np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32))
forward = hd.compile(models.vgg19)
t = time.perf_counter()
forward.entry(params, x)            # staged, and compiled or loaded: ready to run
ready = time.perf_counter() - t
y = np.asarray(forward(params, x))
dt = time.perf_counter() - t
t = time.perf_counter()
np.asarray(forward(params, x))
second = time.perf_counter() - t
print(json.dumps({"seconds": dt, "ready": ready, "second": second,
                  "compiles": runtime.stats["compiles"],
                  "loads": runtime.stats.get("cache_loads", 0), "checksum": float(y.sum())}))
"""


def first_call(cache_dir: str) -> dict:
    env = dict(os.environ, HLODSL_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(pairs: int = 3) -> list[dict]:
    rows = []
    for _ in range(pairs):
        with tempfile.TemporaryDirectory() as d:
            cold, warm = first_call(d), first_call(d)
        assert warm["checksum"] == cold["checksum"]
        rows.append({"cold_s": cold["seconds"], "warm_s": warm["seconds"],
                     "ratio": warm["seconds"] / cold["seconds"],
                     "cold_ready_s": cold["ready"], "warm_ready_s": warm["ready"],
                     "run_s": warm["second"],
                     "cold_compiles": cold["compiles"], "warm_compiles": warm["compiles"],
                     "warm_loads": warm["loads"]})
    return rows


if __name__ == "__main__":
    pairs = int(sys.argv[sys.argv.index("--pairs") + 1]) if "--pairs" in sys.argv else 3
    print("| pair | first call cold (s) | warm (s) | warm/cold | staged+compiled cold (s) | "
          "staged+loaded warm (s) | warm/cold | a later call (s) | compiles cold/warm | "
          "loads warm |\n|" + "---|" * 10)
    for i, r in enumerate(run(pairs)):
        print(f"| {i + 1} | {r['cold_s']:.3f} | {r['warm_s']:.3f} | {r['ratio']:.2f} | "
              f"{r['cold_ready_s']:.3f} | {r['warm_ready_s']:.3f} | "
              f"{r['warm_ready_s'] / r['cold_ready_s']:.2f} | {r['run_s']:.3f} | "
              f"{r['cold_compiles']}/{r['warm_compiles']} | {r['warm_loads']} |")
