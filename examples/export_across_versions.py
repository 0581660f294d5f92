"""An exported training step, written by one hlodsl stack and run by another.

    python examples/export_across_versions.py write step.hlodsl
    other-venv/bin/python examples/export_across_versions.py read step.hlodsl

``write`` exports the step (from abstract types) and writes its bytes; ``read``
deserializes them, runs them, and compares with ``hd.compile`` of the same
step in the reading process. Run the two with virtual environments of
different jax/jaxlib releases (docs/install.md's stacks, or those .ci/compat
makes) to check that artifacts cross releases: docs/interop.md gives what was
seen.
"""

import sys

import numpy as np

import hlodsl as hd
from hlodsl.stdlib import mean, tanh


def loss(params, x):
    return mean(tanh(x @ params["w"]) ** 2)


def step(params, x):
    value, grads = hd.value_and_grad(loss)(params, x)
    return {"w": params["w"] - 0.5 * grads["w"]}, value


def main(mode: str, path: str) -> None:
    import jaxlib  # only to print which release ran

    if mode == "write":
        exported = hd.export(step, {"w": hd.ArrayType(hd.float32, (3, 4))},
                             hd.ArrayType(hd.float32, (5, 3)))
        with open(path, "wb") as f:
            f.write(exported.serialize())
        print(f"wrote {path} with jaxlib {jaxlib.__version__}")
        return
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((3, 4)).astype(np.float32)}
    x = rng.standard_normal((5, 3)).astype(np.float32)
    with open(path, "rb") as f:
        served = hd.deserialize(f.read())
    (new, value), (want, want_value) = served(params, x), hd.compile(step)(params, x)
    equal = np.allclose(np.asarray(new["w"]), np.asarray(want["w"]), rtol=1e-6) and \
        np.allclose(float(value), float(want_value), rtol=1e-6)
    print(f"read with jaxlib {jaxlib.__version__}; written by {served.versions}; "
          f"equal to hd.compile: {equal}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
