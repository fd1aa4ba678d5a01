# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The fold policies ranked pass by pass, against the run's own noise (bench/kv_bench.py --real).

A real run times each workload in several passes over the contenders, in a balanced order
(`order`), so pass k of two contenders met about the same engine (kv_harness.merge_passes). A
policy's ratio to another is taken pass by pass. What one run's noise is, the run measures
itself: a workload of one descriptor per key of at most RPC_TARGET_BYTES (lmcache's 8 MiB
chunks) makes every policy send the same RPCs, one per key, so its policies' ratios are an A/A
comparison, and the largest of their medians is the run's band. A cell's default is ranked ahead
of (or behind) a fixed policy only when every pass agrees and the median is beyond the band
squared; otherwise the two are even. With the band alone, a simulation of equal policies (4
passes, 6 A/A medians, 12 cells, log-normal noise) gave a false verdict in 15% of cells and in
2 runs of 3; with both rules, in 0.5% of cells and 6% of runs, while the real 4 KiB gaps
(1.45-3.7x) stay ranked. So a verdict is what holds from run to run on a noisy machine.
"""

from __future__ import annotations

import statistics

# The plugin's rpc_target_bytes default (src/config.rs, DEFAULT_RPC_TARGET_BYTES): a layer at
# most this size is one RPC under fold=auto, as under fold=true and fold=false when it is a
# key's only descriptor.
RPC_TARGET_BYTES = 8 << 20
POLICIES = ("default", "fold", "nofold")
# Below this the band is taken as this: three or four passes cannot tell a few percent apart.
MIN_BAND = 1.05
MIN_PASSES = 3


def order(items: list, p: int) -> list:
    """Pass p's order of `items`: a Williams design (first row 0, 1, n-1, 2, n-2, ..., each
    next row shifted by one; for an odd n the rows again reversed), so that over n passes (2n
    for an odd n) every item runs in every position equally often and right after every other
    item equally often. Whatever runs right after a container's destroy shares the engine with
    its reclaim: a plain rotation would put the same contender after the same one every pass."""
    n = len(items)
    if n < 2:
        return list(items)
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    row = [items[(i + p) % n] for i in first]
    return row[::-1] if n % 2 and (p // n) % 2 else row


def same_rpcs(workload: dict) -> bool:
    """Every policy sends the same RPCs for this workload (one per key)."""
    return workload["layers"] == 1 and workload["block"] <= RPC_TARGET_BYTES


def pass_ratios(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """a's GB/s over b's, pass by pass, over the passes both ran."""
    return [a[k] / b[k] for k in sorted(a) if k in b and b[k] > 0]


def verdicts(passes: dict[tuple[str, str, str], dict[int, float]], workloads: list[dict], prefix: str) -> dict:
    """`passes`: (contender, workload, op) -> {pass: GB/s of its fastest rep}. Returns the A/A
    band and, per workload and op, the default's median pass ratio to fold and to nofold with
    its verdict (ahead, behind, even, or unranked: too few passes or no A/A workload)."""
    name = {p: f"{prefix} {p}" for p in POLICIES}
    aa_names = {w["name"] for w in workloads if same_rpcs(w)}
    known = {w["name"] for w in workloads}
    aa: list[dict] = []
    cells = []
    # The default's ratios to fold and to nofold, per workload and op: A/A where every policy
    # sends the same RPCs, else a cell to rank against the A/A band.
    for (c, wl, op), got in passes.items():
        if c != name["default"] or wl not in known:
            continue
        for other in ("fold", "nofold"):
            rs = pass_ratios(got, passes.get((name[other], wl, op), {}))
            if not rs:
                continue
            x = {"workload": wl, "op": op, "vs": other, "median": statistics.median(rs), "passes": rs}
            if wl in aa_names:
                if len(rs) >= MIN_PASSES:
                    aa.append(x)
            else:
                cells.append(x)
    band = max([max(x["median"], 1 / x["median"]) for x in aa] + [MIN_BAND]) if aa else None
    bar = band**2 if band else None
    for x in cells:
        m, rs = x["median"], x["passes"]
        if bar is None or len(rs) < MIN_PASSES:
            x["verdict"] = "unranked"
        elif m > bar and min(rs) > 1:
            x["verdict"] = "ahead"
        elif m < 1 / bar and max(rs) < 1:
            x["verdict"] = "behind"
        else:
            x["verdict"] = "even"
    return {"band": band, "bar": bar, "aa": aa, "cells": cells}


def describe(v: dict) -> list[str]:
    """The verdicts as lines for the report."""
    if not v["cells"] and not v["aa"]:
        return []
    out = []
    if v["band"] is None:
        out.append(
            "no workload with one RPC per key under every policy (lmcache) in this run, or too few passes: "
            "the policies are not ranked"
        )
    else:
        aa = ", ".join(f"{x['workload']} {x['op']} vs {x['vs']} {x['median']:.2f}" for x in v["aa"])
        out.append(
            f"A/A (the same RPCs under every policy; default / other, median of passes): {aa}; "
            f"band {1 / v['band']:.2f}-{v['band']:.2f}; ranked: every pass on one side of 1 and the median "
            f"outside {1 / v['bar']:.2f}-{v['bar']:.2f} (the band squared)"
        )
    for x in v["cells"]:
        ps = " ".join(f"{r:.2f}" for r in x["passes"])
        out.append(
            f"{x['workload']:<8} {x['op']:<9} default / {x['vs']:<6} {x['median']:5.2f} (passes {ps}): {x['verdict']}"
        )
    return out
