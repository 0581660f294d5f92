"""``python -m benchmarks [--quick]``: print the benchmark table as Markdown."""

from __future__ import annotations

import argparse
import time

from . import machine, run, table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="a fast smoke run (few iterations; numbers are rough)")
    parser.add_argument("--models", action="store_true",
                        help="add the VGG19 and small-CNN rows (benchmarks/vgg19.py; minutes)")
    parser.add_argument("--no-torch-compile", action="store_true",
                        help="with --models: leave torch.compile out (its compile takes ~1 min)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(quick=args.quick, models=args.models, torch_compile=not args.no_torch_compile)
    mode = "quick (smoke run, rough numbers)" if args.quick else "full"
    print(f"Machine: {machine()}")
    print(f"Mode: {mode}; medians of interleaved timeit loops; "
          f"took {time.perf_counter() - t0:.1f} s\n")
    print(table(rows))


if __name__ == "__main__":
    main()
