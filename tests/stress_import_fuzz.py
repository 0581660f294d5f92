"""Thousands of mutated programs through hd.import_hlo and hd.deserialize (issue 40).

Run outside the suite (tests/test_untrusted_programs.py runs a few hundred)::

    .venv/bin/python tests/stress_import_fuzz.py 3000          # cases (default 2000)

Each run of the child process (tests/fuzz_import.py) draws its cases with its
own seed; after a crash or a hang the next run starts with the next seed. It
prints the totals: cases, ok, refused (HloImportError/ExportError), escapes
(any other exception), crashes (the process died) and hangs, per input kind,
and every crash, hang and escape with the case that caused it.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_import


def main(total: int, per_run: int = 500, first_seed: int = 1000) -> dict:
    totals = {"cases": 0, "ok": 0, "refused": 0, "escapes": 0, "crashes": 0, "hangs": 0,
              "by_kind": {}, "notes": []}
    seed = first_seed
    while totals["cases"] < total:
        r = fuzz_import.run(seed, min(per_run, total - totals["cases"]))
        for k in ("cases", "ok", "refused", "escapes", "crashes", "hangs"):
            totals[k] += r[k]
        for kind, tally in r["by_kind"].items():
            mine = totals["by_kind"].setdefault(kind, {})
            for label, n in tally.items():
                mine[label] = mine.get(label, 0) + n
        totals["notes"] += r["notes"]
        print(f"seed {seed}: {json.dumps({k: r[k] for k in ('cases', 'ok', 'refused', 'escapes', 'crashes', 'hangs')})}",
              flush=True)
        if r["cases"] == 0:
            break  # the child cannot start: say so rather than loop
        seed += 1
    return totals


if __name__ == "__main__":
    result = main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
    print(json.dumps(result, indent=1))
    sys.exit(1 if result["crashes"] or result["hangs"] or result["escapes"] else 0)
