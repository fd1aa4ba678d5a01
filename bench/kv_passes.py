# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The passes of a real run (bench/kv_bench.py --real), pure functions.

A real run times each workload in several passes over the contenders, in a balanced order
(`order`), so that pass k of two contenders met about the same engine (kv_harness.merge_passes),
and takes one contender's ratio to another pass by pass (`pass_ratios`): bench/side_by_side.py
prints their median for ours against each peer (bench/prev_compare.py takes the same ratios of
this build to an earlier one).
"""

from __future__ import annotations


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


def pass_ratios(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """a's GB/s over b's, pass by pass, over the passes both ran."""
    return [a[k] / b[k] for k in sorted(a) if k in b and b[k] > 0]
