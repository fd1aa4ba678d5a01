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


def test_ranked_only_beyond_the_band_of_identical_rpcs():
    # A/A: lmcache's default against fold and nofold, medians 1.10 and 1/1.2 -> band 1.2
    p = passes(
        default_lmcache_write=[1.1, 1.1, 1.1],
        fold_lmcache_write=[1.0, 1.0, 1.0],
        nofold_lmcache_write=[1.32, 1.32, 1.32],
        default_ref_write=[1.3, 1.3, 1.3],  # 1.3x fold: beyond 1.2 -> ahead
        fold_ref_write=[1.0, 1.0, 1.0],
        nofold_ref_write=[1.15, 1.15, 1.15],  # 1.13x nofold: within -> even
        default_ref_read=[1.0, 1.0, 1.0],
        fold_ref_read=[1.3, 1.3, 1.3],  # 0.77x: beyond 1/1.2 -> behind
    )
    v = kv_passes.verdicts(p, [REF, LMC], "real")
    assert abs(v["band"] - 1.2) < 1e-9
    got = {(c["op"], c["vs"]): c["verdict"] for c in v["cells"]}
    assert got == {("write", "fold"): "ahead", ("write", "nofold"): "even", ("read", "fold"): "behind"}
    assert any("band 0.83-1.20" in line for line in kv_passes.describe(v))


def test_ratios_pair_the_same_pass_and_take_the_median():
    # pass 1 is missing for fold: pairs are passes 0, 2, 3; ratios 2, 0.5, 3 -> median 2
    a = {0: 2.0, 1: 9.0, 2: 1.0, 3: 3.0}
    b = {0: 1.0, 2: 2.0, 3: 1.0}
    assert kv_passes.pass_ratios(a, b) == [2.0, 0.5, 3.0]
    p = {("real default", "ref", "read"): a, ("real fold", "ref", "read"): b}
    p |= passes(default_lmcache_read=[1, 1, 1], fold_lmcache_read=[1, 1, 1])
    (cell,) = kv_passes.verdicts(p, [REF, LMC], "real")["cells"]
    assert cell["median"] == 2.0 and cell["verdict"] == "ahead"  # band is the floor, 1.05


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
