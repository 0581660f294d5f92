"""``python -m benchmarks [--quick]``: print the benchmark table as Markdown."""

from __future__ import annotations

import argparse
import time

from . import machine, run, table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="a fast smoke run (few iterations; numbers are rough)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = run(quick=args.quick)
    mode = "quick (smoke run, rough numbers)" if args.quick else "full"
    print(f"Machine: {machine()}")
    print(f"Mode: {mode}; medians of interleaved timeit loops; "
          f"took {time.perf_counter() - t0:.1f} s\n")
    print(table(rows))


if __name__ == "__main__":
    main()
