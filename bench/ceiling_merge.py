# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Merges bench/ceiling JSON files of passes run at different times into one, cell by cell: the
rounds of every pass, the best as the cell's figure.

ci/bench-real.sh runs the ceiling in passes around kv_bench's steps, not all of it first: one
engine's speed drifts within a run (in one run the ceiling read 8 MiB values at depth 1 at 1.54
GB/s on the fresh pool, later in the same engine's life at 0.92-1.04 GB/s, beside kv_bench runs at
0.83-0.87), so a ceiling measured only at the start is not a bound for what ran later.

    python -m bench.ceiling_merge OUT.json PASS.json [PASS.json ...]

A pass that is missing or unreadable is named and skipped; exit 1 when none could be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CELL_KEY = ("keys", "layers", "block", "shape", "depth")


def merge(passes: list[dict]) -> dict:
    """One ceiling result from several: the header of the first pass, `rounds` the sum, each
    cell (by layout, shape and depth) with every pass's rounds and their best."""
    out = {k: v for k, v in passes[0].items() if k != "cells"}
    out["rounds"] = sum(p.get("rounds", 0) for p in passes)
    out["passes"] = len(passes)
    cells: dict[tuple, dict] = {}
    for p in passes:
        for c in p.get("cells", []):
            k = tuple(c[f] for f in CELL_KEY)
            m = cells.get(k)
            if m is None:
                cells[k] = m = {**c, "write_rounds_gbps": [], "read_rounds_gbps": []}
            for op in ("write", "read"):
                m[f"{op}_rounds_gbps"] += c.get(f"{op}_rounds_gbps") or [c[f"{op}_gbps"]]
                m[f"{op}_gbps"] = max(m[f"{op}_rounds_gbps"])
    out["cells"] = list(cells.values())
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    passes = []
    for name in argv[1:]:
        try:
            passes.append(json.loads(Path(name).read_text()))
        except (OSError, ValueError) as e:
            print(f"ceiling_merge: skipping {name}: {e}", file=sys.stderr)
    if not passes:
        print("ceiling_merge: no ceiling pass could be read", file=sys.stderr)
        return 1
    Path(argv[0]).write_text(json.dumps(merge(passes), indent=1) + "\n")
    print(f"ceiling_merge: {len(passes)} pass(es) -> {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
