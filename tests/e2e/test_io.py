# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Data through the real NIXL agent into daos-sim and back, in the shapes real consumers use."""

import threading
import urllib.parse

import numpy as np
import pytest
from nixl_cu12._api import nixl_thread_sync_t
from nixl_cu12._bindings import nixlBackendError

from daoskit import StatsDelta, addr, assert_same, kvbm_layer_separate, pattern, unique_dev_id, unique_key

KiB, MiB = 1 << 10, 1 << 20


def test_write_read_one_buffer(agent):
    data = pattern(MiB)
    dev = agent.put(unique_key("one"), data)
    assert_same(agent.get(dev, MiB), data)


def test_descriptor_of_tens_of_mib(agent):
    """One 48 MiB descriptor each way (an LMCache chunk of a large model)."""
    size = 48 * MiB
    data = pattern(size)
    dev = agent.put(unique_key("big"), data)
    assert_same(agent.get(dev, size), data)


def test_unaligned_offsets_and_lengths(agent):
    """Writes at odd offsets and odd lengths into one key, then reads spanning their seams."""
    key, total = unique_key("odd"), 10_007
    data = pattern(total)
    agent.reg_dram(data)
    dev = agent.reg_obj(key, total)
    cuts = [0, 1, 4_099, 4_100, 7_777, total]
    agent.xfer(
        "WRITE",
        [(addr(data, a), b - a, 0) for a, b in zip(cuts, cuts[1:])],
        [(a, b - a, dev) for a, b in zip(cuts, cuts[1:])],
    )
    assert_same(agent.get(dev, total), data, "whole key")
    assert_same(agent.get(dev, 5_000, offset=3_333), data[3_333:8_333], "a read across three writes")


def test_write_read_many_buffers_in_one_transfer(agent):
    n, size = 16, 256 * KiB
    src, dst = pattern(n * size), np.zeros(n * size, np.uint8)
    agent.reg_dram(src)
    agent.reg_dram(dst)
    devs = [agent.reg_obj(unique_key("many"), size) for _ in range(n)]
    agent.xfer("WRITE", [(addr(src, i * size), size, 0) for i in range(n)], [(0, size, d) for d in devs])
    # Read back in reverse order: slot i of dst gets key n-1-i.
    agent.xfer("READ", [(addr(dst, i * size), size, 0) for i in range(n)], [(0, size, d) for d in reversed(devs)])
    for i in range(n):
        j = n - 1 - i
        assert_same(dst[i * size : (i + 1) * size], src[j * size : (j + 1) * size], f"slot {i}")


def test_kvbm_layer_separate_layout(make_agent, sim_or_none):
    """KVBM: one key per block (devId, empty metaInfo: the key is the decimal devId), one
    descriptor per layer at increasing offsets; in DRAM the layers of a block lie apart."""
    blocks, layers, L = 4, 40, 32 * KiB
    agent = make_agent({})
    src, dst = pattern(blocks * layers * L), np.zeros(blocks * layers * L, np.uint8)
    agent.reg_dram(src)
    agent.reg_dram(dst)
    devs = [agent.reg_obj("", layers * L, unique_dev_id()) for _ in range(blocks)]

    local_w, remote = kvbm_layer_separate(src, devs, layers, L)
    local_r, _ = kvbm_layer_separate(dst, devs, layers, L)
    with StatsDelta(sim_or_none) as w:
        agent.xfer("WRITE", local_w, remote)
    with StatsDelta(sim_or_none) as r:
        agent.xfer("READ", local_r, remote)
    assert_same(dst, src)

    if sim_or_none:  # RPC counts: daos-sim only
        # One RPC per key (1.25 MiB, within one 4 MiB chunk), whatever its descriptors: the bytes
        # and 4 bytes of checksum per 64 KiB block (and, read back, the 24-byte record).
        assert (w["update"], w["fetch"]) == (blocks, 0), w.delta
        assert (r["fetch"], r["update"]) == (blocks, 0), r.delta
        sums = blocks * (layers * L // (64 * KiB)) * 4
        assert w["bytes_written"] == src.nbytes + sums, w.delta
        assert r["bytes_read"] == src.nbytes + sums + blocks * 24, r.delta
    sizes = agent.query([str(d) for d in devs])
    assert [s and int(s["size"]) for s in sizes] == [layers * L] * blocks


def test_lmcache_one_chunk_per_key(agent, sim_or_none):
    """LMCache's dynamic mode: URL-quoted metaInfo keys, one 8 MiB chunk per key, counter devIds,
    register -> prep -> make_prepped_xfer -> transfer -> poll -> release -> deregister."""
    n, chunk = 4, 8 * MiB
    keys = [urllib.parse.quote(f"vllm@model/{unique_key()}@{i}@k v", safe="") for i in range(n)]
    src, dst = pattern(n * chunk), np.zeros(n * chunk, np.uint8)
    agent.reg_dram(src)
    agent.reg_dram(dst)

    def batch(op, buf):
        devs = [agent.reg_obj(k, chunk) for k in keys]
        lh = agent.prep_dram([(addr(buf, i * chunk), chunk, 0) for i in range(n)])
        rh = agent.prep_obj([(0, chunk, d) for d in devs])
        with StatsDelta(sim_or_none) as d:
            agent.prepped(op, lh, list(range(n)), rh, list(range(n)))
        for dev in devs:
            agent.dereg_obj(dev)
        return d

    assert agent.query(keys) == [None] * n
    w = batch("WRITE", src)
    assert [int(q["size"]) for q in agent.query(keys)] == [chunk] * n
    r = batch("READ", dst)
    assert_same(dst, src)
    if sim_or_none:
        # One RPC per 4 MiB chunk (chunk_bytes' default): two per 8 MiB value, on two dkeys.
        assert (w["update"], r["fetch"]) == (2 * n, 2 * n)


def test_prepped_transfers_select_and_merge(agent):
    """Prepped lists with index selection; contiguous indices arrive merged (NIXL merges them)."""
    n, size = 8, 16 * KiB
    src, dst = pattern(n * size), np.zeros(n * size, np.uint8)
    agent.reg_dram(src)
    agent.reg_dram(dst)
    dev = agent.reg_obj(unique_key("prep"), n * size)
    src_h = agent.prep_dram([(addr(src, i * size), size, 0) for i in range(n)])
    dst_h = agent.prep_dram([(addr(dst, i * size), size, 0) for i in range(n)])
    obj_h = agent.prep_obj([(i * size, size, dev) for i in range(n)])
    agent.prepped("WRITE", src_h, list(range(n)), obj_h, list(range(n)))  # merged into one
    agent.prepped("READ", dst_h, list(range(n)), obj_h, list(reversed(range(n))))  # not merged
    for i in range(n):
        j = n - 1 - i
        assert_same(dst[i * size : (i + 1) * size], src[j * size : (j + 1) * size], f"slot {i}")
    # A subset: object ranges 1, 3, 5 into dst slots 0, 1, 2.
    dst[:] = 0
    agent.prepped("READ", dst_h, [0, 1, 2], obj_h, [1, 3, 5])
    for i, j in enumerate([1, 3, 5]):
        assert_same(dst[i * size : (i + 1) * size], src[j * size : (j + 1) * size], f"slot {i}")
    assert not dst[3 * size :].any()


def test_overwrite_existing_key(agent):
    size, patch_at, patch_len = 256 * KiB, 64 * KiB, 16 * KiB
    key = unique_key("over")
    dev = agent.put(key, pattern(size, 1))
    second = pattern(size, 2)
    agent.reg_dram(second)
    agent.xfer("WRITE", [(addr(second), size, 0)], [(0, size, dev)])
    assert_same(agent.get(dev, size), second, "whole overwrite")
    assert int(agent.query([key])[0]["size"]) == size
    # A WRITE of one range sets the whole value to that range: the rest is a miss now, never
    # the earlier value's bytes beside the new ones.
    patch = pattern(patch_len, 3)
    agent.reg_dram(patch)
    agent.xfer("WRITE", [(addr(patch), patch_len, 0)], [(patch_at, patch_len, dev)])
    with pytest.raises(nixlBackendError):
        agent.get(dev, size)
    with pytest.raises(nixlBackendError):
        agent.get(dev, patch_at)
    assert_same(agent.get(dev, patch_len, offset=patch_at), patch, "the patch")
    assert int(agent.query([key])[0]["size"]) == patch_at + patch_len


def test_repost_finished_handle(agent):
    size = 128 * KiB
    src, dst = pattern(size, 1), np.zeros(size, np.uint8)
    agent.reg_dram(src)
    agent.reg_dram(dst)
    dev = agent.reg_obj(unique_key("repost"), size)
    w, state = agent.post("WRITE", [(addr(src), size, 0)], [(0, size, dev)])
    r = None
    try:
        agent.wait(w, state)
        src[:] = pattern(size, 2)  # new content in the same buffer, then the same handle again
        agent.wait(w, agent.agent.transfer(w))
        r, state = agent.post("READ", [(addr(dst), size, 0)], [(0, size, dev)])
        agent.wait(r, state)
        assert_same(dst, src, "first read")
        dst[:] = 0
        agent.wait(r, agent.agent.transfer(r))
        assert_same(dst, src, "reposted read")
    finally:
        agent.release(w)
        if r is not None:
            agent.release(r)


def test_query_present_absent_and_size(agent):
    named, by_dev = unique_key("q"), unique_dev_id()
    agent.put(named, pattern(100_000))  # a size that is no power of two
    agent.put("", pattern(3 * KiB), dev_id=by_dev)
    registered_only = unique_key("q-reg")
    agent.reg_obj(registered_only, 4 * KiB)  # registering alone writes nothing
    res = agent.query([named, unique_key("q-absent"), str(by_dev), registered_only])
    assert len(res) == 4
    assert res[0] is not None and int(res[0]["size"]) == 100_000
    assert res[1] is None
    assert res[2] is not None and int(res[2]["size"]) == 3 * KiB
    assert res[3] is None


def test_read_of_missing_key_raises_backend_error(agent):
    dev = agent.reg_obj(unique_key("missing"), 64 * KiB)
    with pytest.raises(nixlBackendError):
        agent.get(dev, 64 * KiB)
    assert agent.query([unique_key("missing")]) == [None]


@pytest.mark.parametrize("offset,length", [(64 * KiB, 64 * KiB), (32 * KiB, 64 * KiB)], ids=["beyond", "straddling"])
def test_read_past_written_length_raises(agent, offset, length):
    data = pattern(64 * KiB)
    dev = agent.put(unique_key("short"), data, reg_len=128 * KiB)
    with pytest.raises(nixlBackendError):
        agent.get(dev, length, offset)
    assert_same(agent.get(dev, data.nbytes), data, "the written part")


def test_two_agents_share_the_container(make_agent):
    a, b = make_agent(), make_agent()
    key, size = unique_key("shared"), 512 * KiB
    first = pattern(size, 1)
    a.put(key, first)
    dev_b = b.reg_obj(key, size)
    assert int(b.query([key])[0]["size"]) == size
    assert_same(b.get(dev_b, size), first, "b reads a's write")
    second = pattern(size, 2)
    b.reg_dram(second)
    b.xfer("WRITE", [(addr(second), size, 0)], [(0, size, dev_b)])
    dev_a = a.reg_obj(key, size)  # a second registration of the key in a
    assert_same(a.get(dev_a, size), second, "a reads b's overwrite")


def test_four_threads_concurrent_transfers(make_agent):
    agent = make_agent(sync_mode=nixl_thread_sync_t.NIXL_THREAD_SYNC_RW)
    threads, rounds, keys, size = 4, 5, 8, 128 * KiB
    start = threading.Barrier(threads)
    errors = []

    def worker(t):
        try:
            src, dst = pattern(keys * size, t), np.zeros(keys * size, np.uint8)
            agent.reg_dram(src)
            agent.reg_dram(dst)
            start.wait(10)
            for r in range(rounds):
                devs = [agent.reg_obj(unique_key(f"t{t}r{r}"), size) for _ in range(keys)]
                remote = [(0, size, d) for d in devs]
                src[:] = pattern(src.nbytes, 100 * t + r)
                agent.xfer("WRITE", [(addr(src, i * size), size, 0) for i in range(keys)], remote)
                dst[:] = 0
                agent.xfer("READ", [(addr(dst, i * size), size, 0) for i in range(keys)], remote)
                assert_same(dst, src, f"thread {t} round {r}")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((t, repr(e)))
            start.abort()

    ts = [threading.Thread(target=worker, args=(t,), name=f"e2e-{t}") for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts), "a worker thread is stuck"
    assert errors == []


def test_injected_daos_error_fails_one_transfer(agent, sim):
    size = 64 * KiB
    data = pattern(size)
    agent.reg_dram(data)
    dev = agent.reg_obj(unique_key("fail"), size)
    sim.control("fail DER_IO 1")
    with pytest.raises(nixlBackendError):
        agent.xfer("WRITE", [(addr(data), size, 0)], [(0, size, dev)])
    agent.xfer("WRITE", [(addr(data), size, 0)], [(0, size, dev)])  # the next one goes through
    assert_same(agent.get(dev, size), data)


def test_chunked_values_through_nixl(make_agent, sim_or_none):
    """A container of 1 MiB chunks (chunk_bytes): a 9.5 MiB value written as two descriptors that
    end and start inside chunks goes out as one RPC per chunk, reads back whole and across a
    chunk boundary, and queryMem reports its size; a second agent with another chunk_bytes and
    spread_chunks=false on the same container keeps the recorded chunks and their spread names,
    and reads it too."""
    cont = unique_key("chunks")
    agent = make_agent({"container": cont, "create_container": "true", "chunk_bytes": str(MiB)})
    size, cut = 9 * MiB + MiB // 2, 3 * MiB + 12345
    src = pattern(size)
    agent.reg_dram(src)
    key = unique_key("chunked")
    dev = agent.reg_obj(key, size)
    with StatsDelta(sim_or_none) as w:
        agent.xfer(
            "WRITE", [(addr(src), cut, 0), (addr(src, cut), size - cut, 0)], [(0, cut, dev), (cut, size - cut, dev)]
        )
    if sim_or_none:
        # chunks 0-9 (the last half full): 10 RPCs; the chunk holding `cut` gets one of each
        # descriptor's pieces, in one RPC
        assert w["update"] == 10, w.delta
    assert_same(agent.get(dev, size), src, "the chunked value")
    assert_same(agent.get(dev, 2 * MiB, offset=MiB + 7), src[MiB + 7 : 3 * MiB + 7], "a range across chunks")
    assert int(agent.query([key])[0]["size"]) == size
    other = make_agent({"container": cont, "chunk_bytes": "0", "spread_chunks": "false"})
    odev = other.reg_obj(key, size)
    assert_same(other.get(odev, size), src, "the value through an agent of another chunk_bytes")
    assert int(other.query([key])[0]["size"]) == size
