# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Eviction through the real NIXL agent: a pool written with three times its size of new KV
keys keeps taking writes, recent keys read back right, evicted keys are clean misses (the read
fails, queryMem says None), and no read ever returns wrong bytes, with one agent and with two
agents writing at once. daos-sim gives the pool a capacity and a reclaim delay (real DAOS gives
punched space back only when it aggregates)."""

import threading
import time

import numpy as np
import pytest

import daoskit

MIB = 1 << 20
CAPACITY = 48 * MIB
RECLAIM_MS = 200


@pytest.fixture
def small_pool(sim):
    # The pool is shared with every earlier test's containers: start it empty.
    sim.control("reset_data")
    sim.control(f"capacity {CAPACITY}")
    sim.control(f"reclaim_ms {RECLAIM_MS}")
    yield sim
    sim.control("capacity 0")
    sim.control("reclaim_ms 0")


def fill(agent, prefix: str, n: int, size: int, results: dict, window: int = 8):
    """Writes n new keys of `size` bytes, `window` requests in flight; results[i] = ok."""
    bufs = [daoskit.pattern(size, seed=hash((prefix, i)) & 0xFFFF) for i in range(n)]
    for b in bufs:
        agent.reg_dram(b)
    devs = [agent.reg_obj(f"{prefix}/{i}", size) for i in range(n)]
    inflight = []
    for i in range(n):
        h, st = agent.post("WRITE", [(daoskit.addr(bufs[i]), size, 0)], [(0, size, devs[i])])
        inflight.append((i, h, st))
        while len(inflight) >= window or (i == n - 1 and inflight):
            j, hj, sj = inflight.pop(0)
            try:
                agent.wait(hj, sj, timeout=30)
                results[j] = True
            except daoskit.backend_error():
                results[j] = False
            finally:
                agent.release(hj)
    return bufs, devs


def check_reads(agent, prefix: str, bufs, devs, size: int):
    """Every key reads back right or is a clean miss; returns (present, missing). A miss is
    asked about after its read: eviction may still be running, so a key present for an earlier
    query may be gone by its read, but once gone it stays gone (nobody rewrites it)."""
    present = missing = 0
    for i, (want, dev) in enumerate(zip(bufs, devs)):
        key = f"{prefix}/{i}"
        out = np.zeros(size, dtype=np.uint8)
        agent.reg_dram(out)
        try:
            agent.xfer("READ", [(daoskit.addr(out), size, 0)], [(0, size, dev)])
        except daoskit.backend_error():
            after = agent.query([key])[0]
            assert after is None, f"{key} is a miss but queryMem says {after}"
            missing += 1
            continue
        daoskit.assert_same(out, want, key)
        present += 1
    return present, missing


def test_a_pool_written_three_times_over_keeps_taking_writes(small_pool, make_agent):
    size = MIB
    n = 3 * CAPACITY // size
    agent = make_agent(params={"evict": "true", "evict_reclaim_ms": str(RECLAIM_MS * 2)})
    prefix = daoskit.unique_key("fill")
    results: dict[int, bool] = {}
    bufs, devs = fill(agent, prefix, n, size, results)
    last = [results[i] for i in range(2 * n // 3, n)]
    assert sum(last) >= 0.95 * len(last), f"{sum(last)} of {len(last)} writes of the last third succeeded"
    present, missing = check_reads(agent, prefix, bufs, devs, size)
    assert missing > 0, "nothing was evicted from a pool written three times over"
    assert present > 0
    # The newest keys were written last: eviction takes the oldest first.
    recent = agent.query([f"{prefix}/{i}" for i in range(n - n // 10, n)])
    assert all(r is not None for r in recent), "a recent key was evicted"
    assert small_pool.stats()["punch"] >= missing


def test_two_agents_writing_at_once_share_one_eviction_order(small_pool, make_agent):
    size = MIB
    n = 3 * CAPACITY // size // 2
    a = make_agent(params={"evict": "true", "evict_reclaim_ms": str(RECLAIM_MS * 2)})
    b = make_agent(params={"evict": "true", "evict_reclaim_ms": str(RECLAIM_MS * 2)})
    results = {"a": {}, "b": {}}
    out = {}
    prefixes = {"a": daoskit.unique_key("two_a"), "b": daoskit.unique_key("two_b")}

    def writer(name, agent):
        out[name] = fill(agent, prefixes[name], n, size, results[name], window=4)

    threads = [threading.Thread(target=writer, args=(k, v)) for k, v in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    for name in ("a", "b"):
        last = [results[name][i] for i in range(2 * n // 3, n)]
        assert sum(last) >= 0.95 * len(last), f"agent {name}: {sum(last)} of {len(last)} of the last third"
    missing = 0
    present = {}
    for name, agent in (("a", a), ("b", b)):
        bufs, devs = out[name]
        # Each agent reads the other's keys too: the cache is shared.
        other = "b" if name == "a" else "a"
        obufs, _ = out[other]
        odevs = [agent.reg_obj(f"{prefixes[other]}/{i}", size) for i in range(n)]
        p1, m1 = check_reads(agent, prefixes[name], bufs, devs, size)
        p2, m2 = check_reads(agent, prefixes[other], obufs, odevs, size)
        missing += m1 + m2
        present[name] = p1
    assert missing > 0, "nothing was evicted"
    # Two evictors share one view (the ledger): together they do not empty the cache. Each
    # keeps room for its writes over one reclaim window, at most half the pool in all.
    kept = (present["a"] + present["b"]) * size
    assert kept >= CAPACITY // 4, f"only {kept >> 20} MiB of a {CAPACITY >> 20} MiB pool kept: {present}"


def test_a_pool_full_of_what_eviction_cannot_touch_fails_writes_well_before_their_deadline(small_pool, make_agent):
    # Another container (no eviction) fills the pool: our evictor finds nothing of its own to
    # punch, so a refused write must fail soon (NOSPACE_GRACE and one pass), not wait out its
    # 60 s deadline, and no key of it may read back.
    size = MIB
    other = make_agent(params={"container": daoskit.unique_key("untouchable"), "create_container": "true"})
    filled: dict[int, bool] = {}
    fill(other, daoskit.unique_key("full"), CAPACITY // size + 4, size, filled, window=2)
    assert not all(filled.values()), "the pool never filled: daos-sim's capacity is not in force"
    ours = make_agent(params={"evict": "true", "evict_reclaim_ms": str(RECLAIM_MS * 2), "timeout_ms": "60000"})
    prefix = daoskit.unique_key("refused")
    buf = daoskit.pattern(size, seed=7)
    ours.reg_dram(buf)
    dev = ours.reg_obj(f"{prefix}/0", size)
    t0 = time.monotonic()
    with pytest.raises(daoskit.backend_error()):
        ours.xfer("WRITE", [(daoskit.addr(buf), size, 0)], [(0, size, dev)], timeout=90)
    took = time.monotonic() - t0
    assert took < 20, f"a write that eviction cannot make room for failed after {took:.1f} s (its deadline is 60 s)"
    assert ours.query([f"{prefix}/0"])[0] is None
