# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The side-by-side of a change: `real default` (this build) against `real prev` (bench/prev.sh's
build of an earlier commit), pass by pass, from the results.json of bench.kv_bench --real runs
with --contenders real-default,real-prev.

    python -m bench.prev_compare OUT/w64/results.json OUT/w1/results.json [--min-write 0.95 --min-read 0.90]

Prints per run, workload and op the median GB/s of each and the ratio pass by pass (median,
lowest), and whether every cell's median ratio meets the bar. Exit 0 always: a finding, not a
failure (the machine is noisy)."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def cells(path: Path):
    d = json.loads(path.read_text())
    by = {(r["contender"], r["workload"], r["op"]): dict(r["passes"]) for r in d["rows"] if r.get("passes")}
    window = d.get("args", {}).get("window", "?")
    for (c, w, op), new in sorted(by.items()):
        if c != "real default":
            continue
        old = by.get(("real prev", w, op))
        if not old:
            continue
        ratios = [new[k] / old[k] for k in sorted(new) if k in old and old[k] > 0]
        if ratios:
            yield window, w, op, statistics.median(new.values()), statistics.median(old.values()), ratios


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--min-write", type=float, default=0.95)
    ap.add_argument("--min-read", type=float, default=0.90)
    a = ap.parse_args()
    print("| in flight | workload | op | new GB/s | old GB/s | new/old median of passes | lowest pass | bar |")
    print("|---|---|---|---|---|---|---|---|")
    short = []
    for path in a.results:
        for window, w, op, new, old, ratios in cells(path):
            med = statistics.median(ratios)
            bar = a.min_read if op == "read" else a.min_write
            ok = med >= bar
            short += [] if ok else [f"{window} {w} {op}"]
            print(
                f"| {window} | {w} | {op} | {new:.3f} | {old:.3f} | {med:.2f}x | {min(ratios):.2f}x | "
                f"{'meets' if ok else 'SHORT of'} {bar:.2f}x |"
            )
    print("all cells meet the bar" if not short else f"short of the bar: {', '.join(short)}")


if __name__ == "__main__":
    main()
