"""Every op's oracle check (tests/test_ops.py) with many fresh examples: a tool, not a test.

The suite draws a few fixed examples per op (tests/conftest.py derandomizes hypothesis),
so a run is repeatable; this draws ``N`` new ones per op and reports every opcode that
fails, with hypothesis' reproduction blob, instead of stopping at the first::

    python tests/stress_ops.py 100              # all ops, 100 examples each
    python tests/stress_ops.py 2000 atan2 add   # some ops
"""

from __future__ import annotations

import sys
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
warnings.simplefilter("ignore")  # recompile warnings: every example is a new signature

import test_ops  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402


def stress(opcode: str, n: int) -> None:
    test_ops.check_opcode(opcode, settings(
        max_examples=n, deadline=None, database=None, derandomize=False, print_blob=True,
        suppress_health_check=list(HealthCheck)))


def main(argv: list[str]) -> int:
    n, only = int(argv[0]), argv[1:]
    failed = []
    for opcode in only or test_ops.RUNNABLE:
        start = time.perf_counter()
        try:
            stress(opcode, n)
            print(f"ok   {opcode} ({time.perf_counter() - start:.0f} s)", flush=True)
        except Exception as e:  # report it and go on to the next op
            text = "".join(traceback.format_exception_only(type(e), e))
            print(f"FAIL {opcode} ({time.perf_counter() - start:.0f} s)\n{text}", flush=True)
            failed.append(opcode)
    print(f"{len(failed)} failed: {' '.join(failed)}" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["100"]))
