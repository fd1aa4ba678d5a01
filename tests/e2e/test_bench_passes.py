# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark's balanced pass order and pass-by-pass ratios (bench/kv_passes.py) and the merge
of a real run's passes (bench/kv_harness.merge_passes): pure functions, no DAOS."""

from bench import kv_passes
from bench.kv_harness import Row, merge_passes


def test_order_balances_positions_and_predecessors():
    from collections import Counter

    for n in (2, 3, 4, 5):
        items = list(range(n))
        period = n * (2 if n % 2 else 1)
        rows = [kv_passes.order(items, p) for p in range(period)]
        assert all(sorted(r) == items for r in rows)
        # every item in every position equally often
        assert set(Counter((r.index(x), x) for r in rows for x in r).values()) == {period // n}
        # every item right after every other equally often (each ordered pair once per n rows)
        pairs = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
        assert len(pairs) == n * (n - 1) and len(set(pairs.values())) == 1
    assert kv_passes.order(["a"], 3) == ["a"]


def test_ratios_pair_the_same_pass():
    # pass 1 is missing for b: pairs are passes 0, 2, 3 -> ratios 2, 0.5, 3
    a = {0: 2.0, 1: 9.0, 2: 1.0, 3: 3.0}
    b = {0: 1.0, 2: 2.0, 3: 1.0}
    assert kv_passes.pass_ratios(a, b) == [2.0, 0.5, 3.0]


def test_merge_keeps_every_rep_and_each_pass_fastest():
    def row(pass_no, *secs):
        return Row("real default", "ref", "read", 10**9, 40, times=list(secs), pass_no=pass_no)

    (m,) = merge_passes([row(0, 2.0, 1.0), row(1, 4.0), row(1, 0.5), row(2, 1.25)])
    assert m.best and m.times == [2.0, 1.0, 4.0, 0.5, 1.25]
    assert m.passes == {0: 1.0, 1: 2.0, 2: 0.8}
    assert m.gbps == 2.0 and m.gbps_range == (0.25, 2.0)
