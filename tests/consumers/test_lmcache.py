# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""LMCache 0.5.6's own engine stores and finds its KV cache in DAOS (daos-sim) through our plugin.

LMCache drives NIXL itself here: LMCacheEngineBuilder, its NIXL storage backend with backend
OBJ (our plugin installed under that name), S3 parameters only (`bucket` names the container,
the pool comes from DAOS_POOL), CPU staging buffers. With `local_cpu: false` LMCache's CPU pool
is only NIXL's staging buffer, so every hit below is a DAOS read (queryMem for lookups, READ for
retrieves), and every byte is compared with what was stored.
"""

import ctypes
import os
import time
import uuid

import pytest
import torch

import lmc

CHUNK = 256


@pytest.fixture
def engines():
    """engines(setup) -> engine; every engine made is destroyed after the test."""
    made = []

    def make(setup):
        iid, engine = lmc.build(setup)
        made.append(iid)
        return engine

    yield make
    for iid in reversed(made):
        lmc.destroy(iid)


def bucket() -> str:
    return f"lmc-{uuid.uuid4().hex[:10]}"


def assert_retrieves(engine, setup, tokens, n_hit):
    """The first n_hit tokens come back byte-equal to what was stored; nothing after them."""
    mask, out = lmc.retrieve(engine, setup, tokens)
    assert int(mask.sum()) == n_hit and bool(mask[:n_hit].all()), (int(mask.sum()), n_hit)
    want = lmc.kv_for(setup, tokens)
    assert torch.equal(out[:, :, :n_hit, :], want[:, :, :n_hit, :]), "retrieved KV bytes differ from the stored ones"
    # A miss leaves the caller's buffer as it was (NaN here), never filled with something else.
    assert bool(out[:, :, n_hit:, :].isnan().all()), "bytes were written past the hit prefix"


def test_sequences_prefix_hits_and_a_clean_miss(engines):
    setup = lmc.Setup(bucket=bucket())
    engine = engines(setup)
    seqs = [lmc.tokens_for(seed, 4 * CHUNK) for seed in range(3)]
    for toks in seqs:
        lmc.store(engine, setup, toks)
    for toks in seqs:
        assert engine.lookup(toks) == toks.numel()
        assert_retrieves(engine, setup, toks, toks.numel())

    # A request sharing seq 0's first two chunks, then diverging: a two-chunk prefix hit.
    fork = torch.cat([seqs[0][: 2 * CHUNK], lmc.tokens_for(99, 2 * CHUNK)])
    assert engine.lookup(fork) == 2 * CHUNK
    assert_retrieves(engine, setup, fork, 2 * CHUNK)

    # Never stored: a clean miss (queryMem says absent; no error, nothing written).
    never = lmc.tokens_for(1234, 3 * CHUNK)
    assert engine.lookup(never) == 0
    assert_retrieves(engine, setup, never, 0)


def test_a_second_engine_finds_the_first_ones_data(engines):
    name = bucket()
    first = lmc.Setup(bucket=name)
    a = engines(first)
    seqs = [lmc.tokens_for(seed, 3 * CHUNK) for seed in range(10, 14)]
    for toks in seqs:
        lmc.store(a, first, toks)

    # A new engine (its own NIXL agent and plugin instance, empty LMCache state) on the same
    # bucket finds everything through DAOS alone.
    second = lmc.Setup(bucket=name)
    b = engines(second)
    for toks in seqs:
        assert b.lookup(toks) == toks.numel()
        assert_retrieves(b, second, toks, toks.numel())

    # Another bucket is another container: nothing of the first one is visible there.
    other = lmc.Setup(bucket=bucket())
    c = engines(other)
    assert c.lookup(seqs[0]) == 0
    assert_retrieves(c, other, seqs[0], 0)


def test_async_put_with_presence_cache(engines):
    setup = lmc.Setup(bucket=bucket(), async_put=True, presence_cache=True)
    engine = engines(setup)
    seqs = [lmc.tokens_for(seed, 4 * CHUNK) for seed in range(20, 24)]
    for toks in seqs:
        lmc.store(engine, setup, toks)  # returns before the WRITEs complete
    lmc.wait_puts_done(engine)
    backend = lmc.nixl_backend(engine)
    for toks in seqs:
        assert engine.lookup(toks) == toks.numel()
        assert_retrieves(engine, setup, toks, toks.numel())
    assert backend.hit_counter > 0, "the presence cache answered no lookup"

    # A fresh engine has an empty presence cache: its hits come from queryMem on DAOS.
    fresh = lmc.Setup(bucket=setup.bucket, async_put=True, presence_cache=True)
    other = engines(fresh)
    for toks in seqs:
        assert other.lookup(toks) == toks.numel()
        assert_retrieves(other, fresh, toks, toks.numel())


def test_async_put_in_flight_is_a_miss_then_a_hit(engines):
    # nixl_async_put, as LMCache documents it: store() hands the put to a background task and
    # returns at once. While a chunk's put is in flight LMCache answers "absent" for it (its
    # backend keeps the key in progress_set), so a repeat looked up in that window is a miss to
    # recompute, never served from a half-written key; once the put completes it is a hit.
    # daos-sim holds every RPC ("hang") to keep the puts in flight for as long as the test needs.
    sim = ctypes.CDLL(os.environ["NIXL_DAOS_LIBDAOS"])  # daos-sim, the very instance the plugin loaded (conftest)
    sim.daos_sim_control.argtypes = [ctypes.c_char_p]
    setup = lmc.Setup(bucket=bucket(), async_put=True)
    engine = engines(setup)
    toks = lmc.tokens_for(40, 4 * CHUNK)
    backend = lmc.nixl_backend(engine)
    assert sim.daos_sim_control(b"hang") == 0
    try:
        t0 = time.monotonic()
        lmc.store(engine, setup, toks)
        returned = time.monotonic() - t0
        deadline = time.monotonic() + 10
        while not backend.progress_set and time.monotonic() < deadline:
            time.sleep(0.01)
        with backend.progress_lock:
            in_flight = len(backend.progress_set)
        assert in_flight > 0, "no put in flight while DAOS holds every RPC: store() did not go asynchronous"
        assert engine.lookup(toks) == 0, "a chunk whose put is still in flight was reported present"
        assert_retrieves(engine, setup, toks, 0)
    finally:
        assert sim.daos_sim_control(b"resume") == 0
    assert returned < 5, f"store() took {returned:.1f} s with DAOS holding its puts: not asynchronous"
    lmc.wait_puts_done(engine)
    assert engine.lookup(toks) == toks.numel()
    assert_retrieves(engine, setup, toks, toks.numel())


def test_static_pool_reuses_its_slots(engines):
    # nixl_pool_size > 0: a fixed set of OBJ keys (LMCache's slots), registered once and
    # overwritten as LMCache evicts; LMCache keeps the chunk -> slot map in memory.
    setup = lmc.Setup(bucket=bucket(), pool_size=8)
    engine = engines(setup)
    seqs = [lmc.tokens_for(seed, 4 * CHUNK) for seed in range(30, 35)]  # 20 chunks > 8 slots
    # LMCache's puts run on its event loop after store() returns; slots are taken and evicted as
    # they complete, so each store is let finish before the next (else which chunks keep a slot
    # depends on the loop's timing: a seen flake, lookup 0 of the last sequence).
    for toks in seqs[:2]:
        lmc.store(engine, setup, toks)
        lmc.wait_puts_done(engine)
    for toks in seqs[:2]:
        assert engine.lookup(toks) == toks.numel()
        assert_retrieves(engine, setup, toks, toks.numel())
    for toks in seqs[2:]:
        lmc.store(engine, setup, toks)  # evicts older chunks, rewriting their slots
        lmc.wait_puts_done(engine)
    for toks in seqs[-2:]:
        assert engine.lookup(toks) == toks.numel()
        assert_retrieves(engine, setup, toks, toks.numel())
    assert engine.lookup(seqs[0]) == 0, "an evicted chunk is still reported"


def test_large_chunks_of_8_mib(engines):
    setup = lmc.Setup(bucket=bucket(), layers=8, heads=8, head_size=128, cpu_gb=0.5)
    assert setup.chunk_bytes == 8 << 20
    engine = engines(setup)
    seqs = [lmc.tokens_for(seed, 3 * CHUNK) for seed in range(40, 42)]
    for toks in seqs:
        lmc.store(engine, setup, toks)
    reader_setup = lmc.Setup(bucket=setup.bucket, layers=8, heads=8, head_size=128, cpu_gb=0.5)
    reader = engines(reader_setup)
    for toks in seqs:
        assert reader.lookup(toks) == toks.numel()
        assert_retrieves(reader, reader_setup, toks, toks.numel())
