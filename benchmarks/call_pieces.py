"""Where a compiled ``dense`` call's time goes: PJRT's execute, then each piece of
hlodsl's call path added in turn, against ``jax.jit`` (issue 29).

``python -m benchmarks.call_pieces [repeats]`` prints one line per step: the
median and minimum microseconds of CPU time of the calling thread
(``time.thread_time``, which a loaded machine disturbs less than the wall
clock), the steps interleaved repeat by repeat.
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit

import numpy as np

STEPS = {
    "PJRT execute_sharded + result handler": "raw(bufs).consume_with_handlers(handlers)",
    "+ the runtime's execute closure": "execute(bufs)",
    "+ the buffer list": "execute([a._buf for a in args])",
    "+ making the result array": "wrap(execute([a._buf for a in args])[0])",
    "the whole hd.compile call": "f(*args)",
    "jax.jit, for comparison": "jf(*jargs)",
}


def namespace() -> dict:
    import jax

    import hlodsl as hd
    from hlodsl import runtime
    from hlodsl.runtime import buffers, jaxlib_compat

    from .foundation import _inputs, dense, dense_jnp

    host = _inputs()["dense"]
    args = tuple(hd.array(h) for h in host)
    jargs = tuple(jax.device_put(h) for h in host)
    f, jf = hd.compile(dense), jax.jit(dense_jnp)
    np.testing.assert_allclose(np.asarray(f(*args)), np.asarray(jf(*jargs)), rtol=1e-5)
    entry = f.entry(*args)
    device = runtime.backend().local_devices()[0]
    out = entry.staged.out_types[0]
    handlers = [jaxlib_compat.result_handler(buffers.aval(out.shape, out.dtype.np_dtype),
                                             buffers.single_device(device))]
    cls = entry.out_class

    def wrap(buf):
        a = object.__new__(cls)
        a._buf, a._node = buf, None
        return a

    return {"f": f, "jf": jf, "args": args, "jargs": jargs, "bufs": [a._buf for a in args],
            "raw": entry.exe._exe.execute_sharded, "handlers": handlers,
            "execute": entry.exe.execute, "wrap": wrap}


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    repeats = int(argv[0]) if argv else 21
    ns = namespace()
    timers = {k: timeit.Timer(s, globals=ns, timer=time.thread_time) for k, s in STEPS.items()}
    for t in timers.values():
        t.timeit(2000)
    samples: dict[str, list[float]] = {k: [] for k in STEPS}
    for _ in range(repeats):
        for k, t in timers.items():
            samples[k].append(t.timeit(5000) / 5000 * 1e6)
    from .report import machine

    print(f"Machine: {machine()}\n")
    print("| what runs | median µs | min µs |\n|---|---:|---:|")
    for k, v in samples.items():
        print(f"| {k} | {statistics.median(v):.2f} | {min(v):.2f} |")


if __name__ == "__main__":
    main()
