# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark's pass-by-pass ranking of the fold policies (bench/kv_passes.py) and the merge
of a real run's passes (bench/kv_harness.merge_passes): pure functions, no DAOS."""

from bench import kv_passes
from bench.kv_harness import Row, merge_passes

MiB = 1 << 20
REF = {"name": "ref", "keys": 12, "layers": 40, "block": MiB}
LMC = {"name": "lmcache", "keys": 60, "layers": 1, "block": 8 * MiB}


def passes(**cells):
    """cells: 'default_ref_write'=[GB/s per pass] -> the verdicts' input."""
    out = {}
    for k, v in cells.items():
        pol, wl, op = k.split("_")
        out[(f"real {pol}", wl, op)] = dict(enumerate(v))
    return out


def test_same_rpcs_is_one_descriptor_per_key_up_to_the_target():
    assert kv_passes.same_rpcs(LMC)
    assert not kv_passes.same_rpcs(REF)
    assert not kv_passes.same_rpcs({"name": "big", "keys": 1, "layers": 1, "block": 16 * MiB})


def test_ranked_only_where_every_pass_agrees_beyond_the_band_squared():
    # A/A: lmcache's default against fold and nofold, medians 1.10 and 1/1.2 -> band 1.2, bar 1.44
    p = passes(
        default_lmcache_write=[1.1, 1.1, 1.1],
        fold_lmcache_write=[1.0, 1.0, 1.0],
        nofold_lmcache_write=[1.32, 1.32, 1.32],
        default_ref_write=[1.5, 1.5, 1.5],  # 1.5x fold in every pass: beyond 1.44 -> ahead
        fold_ref_write=[1.0, 1.0, 1.0],
        nofold_ref_write=[1.15, 1.15, 1.15],  # 1.30x nofold: beyond the band, not its square -> even
        default_ref_read=[1.0, 1.0, 1.0],
        fold_ref_read=[1.6, 1.6, 1.6],  # 0.62x in every pass: beyond 1/1.44 -> behind
        nofold_ref_read=[0.4, 0.4, 0.9],  # median 2.5x, but one pass 1.11x: every pass agrees -> ahead
        default_ref_overwrite=[3.0, 3.0, 0.9],
        fold_ref_overwrite=[1.0, 1.0, 1.0],  # median 3x, one pass below 1 -> even
    )
    v = kv_passes.verdicts(p, [REF, LMC], "real")
    assert abs(v["band"] - 1.2) < 1e-9 and abs(v["bar"] - 1.44) < 1e-9
    got = {(c["op"], c["vs"]): c["verdict"] for c in v["cells"]}
    assert got == {
        ("write", "fold"): "ahead",
        ("write", "nofold"): "even",
        ("read", "fold"): "behind",
        ("read", "nofold"): "ahead",
        ("overwrite", "fold"): "even",
    }
    assert any("band 0.83-1.20" in line and "outside 0.69-1.44" in line for line in kv_passes.describe(v))


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


def test_ratios_pair_the_same_pass_and_take_the_median():
    # pass 1 is missing for fold: pairs are passes 0, 2, 3; ratios 2, 0.5, 3 -> median 2
    a = {0: 2.0, 1: 9.0, 2: 1.0, 3: 3.0}
    b = {0: 1.0, 2: 2.0, 3: 1.0}
    assert kv_passes.pass_ratios(a, b) == [2.0, 0.5, 3.0]
    p = {("real default", "ref", "read"): a, ("real fold", "ref", "read"): b}
    p |= passes(default_lmcache_read=[1, 1, 1], fold_lmcache_read=[1, 1, 1])
    (cell,) = kv_passes.verdicts(p, [REF, LMC], "real")["cells"]
    # band is the floor, 1.05 (bar 1.1025); one pass at 0.5 -> not every pass agrees
    assert cell["median"] == 2.0 and cell["verdict"] == "even"


def test_unranked_without_an_a_a_workload_or_with_too_few_passes():
    p = passes(default_ref_write=[2.0, 2.0, 2.0], fold_ref_write=[1.0, 1.0, 1.0])
    v = kv_passes.verdicts(p, [REF], "real")
    assert v["band"] is None and [c["verdict"] for c in v["cells"]] == ["unranked"]
    p = passes(
        default_ref_write=[2.0, 2.0],
        fold_ref_write=[1.0, 1.0],
        default_lmcache_write=[1, 1, 1],
        fold_lmcache_write=[1, 1, 1],
    )
    assert [c["verdict"] for c in kv_passes.verdicts(p, [REF, LMC], "real")["cells"]] == ["unranked"]


def test_merge_keeps_every_rep_and_each_pass_fastest():
    def row(pass_no, *secs):
        return Row("real default", "ref", "read", 10**9, 40, times=list(secs), pass_no=pass_no)

    (m,) = merge_passes([row(0, 2.0, 1.0), row(1, 4.0), row(1, 0.5), row(2, 1.25)])
    assert m.best and m.times == [2.0, 1.0, 4.0, 0.5, 1.25]
    assert m.passes == {0: 1.0, 1: 2.0, 2: 0.8}
    assert m.gbps == 2.0 and m.gbps_range == (0.25, 2.0)
