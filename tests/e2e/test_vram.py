# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""GPU memory (VRAM) through the real NIXL agent, against the CUDA driver stand-in
(tests/cuda-sim, loaded by the plugin through NIXL_DAOS_LIBCUDA): the stand-in's device memory
lives in host memory but is device memory to every driver call, so the plugin's VRAM path
(registration checks, copies through the driver on the lanes, staging, verification) runs as it
would on a GPU. ci/gpu-check.sh runs the same path on a real GPU.

What is checked: VRAM is listed where a driver is found (and not where none is); writes from
VRAM and reads into VRAM round-trip byte for byte, across chunks and at offsets, and agree with
DRAM transfers of the same keys; a KVBM layer-separate batch from VRAM; registrations that are
not device memory of the named device are refused, saying what they are; a copy that fails
fails its request cleanly (a write leaves the key absent, never half-written); a read that times
out leaves its GPU buffer untouched after DAOS answers late."""

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import daoskit
from daoskit import BACKEND, addr, assert_same, pattern, unique_key

MiB = 1 << 20

pytestmark = pytest.mark.skipif(not daoskit.CUDA_SIM_SO.is_file(), reason="needs target/release/libcuda_sim.so")


@pytest.fixture(scope="module")
def gpu(nixl_env):
    return daoskit.Gpu(str(daoskit.CUDA_SIM_SO))


@pytest.fixture(autouse=True)
def calm_gpu(gpu):
    gpu.control("calm")
    yield
    gpu.control("calm")


def vram_put(agent, gpu, key: str, data: np.ndarray, offset: int = 0, reg_len: int | None = None) -> tuple[int, int]:
    """Writes `data` from fresh device memory to `key` at `offset`; returns (devId, dptr)."""
    dptr = gpu.alloc(data.nbytes)
    gpu.upload(dptr, data)
    agent.reg_vram(dptr, data.nbytes)
    dev = agent.reg_obj(key, reg_len or offset + data.nbytes)
    agent.xfer("WRITE", [(dptr, data.nbytes, 0)], [(offset, data.nbytes, dev)], mem="VRAM")
    return dev, dptr


def vram_get(agent, gpu, dev: int, nbytes: int, offset: int = 0) -> np.ndarray:
    dptr = gpu.alloc(nbytes)
    agent.reg_vram(dptr, nbytes)
    agent.xfer("READ", [(dptr, nbytes, 0)], [(offset, nbytes, dev)], mem="VRAM")
    return gpu.download(dptr, nbytes)


def test_vram_is_listed_where_a_driver_is_found(agent):
    assert sorted(agent.agent.get_backend_mem_types(BACKEND)) == ["DRAM_SEG", "OBJ_SEG", "VRAM_SEG"]
    # Without a driver (a fresh process: the driver is probed once per process).
    code = (
        "import json, daoskit; a = daoskit.DaosAgent(); "
        "print(json.dumps(sorted(a.agent.get_backend_mem_types(daoskit.BACKEND))))"
    )
    env = dict(os.environ, NIXL_DAOS_LIBCUDA="/nonexistent/libcuda.so.1")
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=Path(__file__).parent
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == ["DRAM_SEG", "OBJ_SEG"]


@pytest.mark.parametrize("size", [4096, 1 * MiB + 17, 9 * MiB])
def test_vram_round_trip_agrees_with_dram(agent, gpu, size):
    data = pattern(size, size % 251)
    key = unique_key("vram")
    dev, _ = vram_put(agent, gpu, key, data)
    assert_same(vram_get(agent, gpu, dev, size), data, "read into VRAM")
    # The same key read into DRAM, and a DRAM-written key read into VRAM: one data path.
    assert_same(agent.get(dev, size), data, "read into DRAM")
    other = pattern(size, 7)
    dram_dev = agent.put(unique_key("dram"), other)
    assert_same(vram_get(agent, gpu, dram_dev, size), other, "DRAM-written key read into VRAM")
    assert int(agent.query([key])[0]["size"]) == size


def test_vram_ranges_at_offsets_across_chunks(agent, gpu):
    """A value of three 4 MiB chunks written in two VRAM ranges, read back in three ranges that
    straddle chunk boundaries, into one device buffer at offsets."""
    size = 12 * MiB
    data = pattern(size, 3)
    dptr = gpu.alloc(size)
    gpu.upload(dptr, data)
    agent.reg_vram(dptr, size)
    dev = agent.reg_obj(unique_key("vram-off"), size)
    half = 5 * MiB + 3
    agent.xfer(
        "WRITE",
        [(dptr, half, 0), (dptr + half, size - half, 0)],
        [(0, half, dev), (half, size - half, dev)],
        mem="VRAM",
    )
    out = gpu.alloc(size)
    agent.reg_vram(out, size)
    cuts = [0, 3 * MiB + 1, 8 * MiB + 5, size]
    local = [(out + a, b - a, 0) for a, b in zip(cuts, cuts[1:])]
    remote = [(a, b - a, dev) for a, b in zip(cuts, cuts[1:])]
    agent.xfer("READ", local, remote, mem="VRAM")
    assert_same(gpu.download(out, size), data, "ranges across chunks")


def test_kvbm_layer_separate_batch_from_vram(agent, gpu):
    """KVBM's layer-separate layout (one key per block, one descriptor per layer) from one
    device buffer; read back into DRAM and compared block by block."""
    blocks, layers, layer_bytes = 8, 4, 64 * 1024
    host = pattern(blocks * layers * layer_bytes, 11)
    dptr = gpu.alloc(host.nbytes)
    gpu.upload(dptr, host)
    agent.reg_vram(dptr, host.nbytes)
    devs = [agent.reg_obj("", layers * layer_bytes, daoskit.unique_dev_id()) for _ in range(blocks)]
    local, remote = daoskit.kvbm_layer_separate(host, devs, layers, layer_bytes)
    # The same layout, at device addresses.
    local = [(dptr + (a - addr(host)), n, 0) for a, n, _ in local]
    agent.xfer("WRITE", local, remote, mem="VRAM")
    for b, dev in enumerate(devs):
        got = agent.get(dev, layers * layer_bytes)
        for layer in range(layers):
            at = (layer * blocks + b) * layer_bytes
            assert_same(
                got[layer * layer_bytes : (layer + 1) * layer_bytes],
                host[at : at + layer_bytes],
                f"block {b} layer {layer}",
            )


def refused(call) -> str:
    with pytest.raises(daoskit.nixl_errors()) as e:
        call()
    return str(e.value)


def test_registration_checks_it_is_device_memory_of_that_device(agent, gpu, capfd):
    """Each refusal says what the range is: host memory, memory of no such device, a range past
    its allocation."""
    host = np.zeros(4096, dtype=np.uint8)
    dptr = gpu.alloc(4096)
    for desc, says in [
        ((addr(host), 4096, 0, ""), "CUDA does not know the address"),
        ((dptr, 4096, 1, ""), "VRAM devId 1 is not a CUDA device of this process"),
        ((dptr, 8192, 0, ""), "it runs past its allocation"),
    ]:
        capfd.readouterr()
        refused(lambda d=desc: agent.agent.register_memory([d], "VRAM", backends=[BACKEND]))
        err = capfd.readouterr().err
        assert says in err, err[-2000:]
    # NIXL itself refuses a VRAM transfer of memory never registered as VRAM.
    key = unique_key("unreg")
    dev = agent.reg_obj(key, 4096)
    refused(lambda: agent.xfer("WRITE", [(addr(host), 4096, 0)], [(0, 4096, dev)], mem="VRAM"))


def test_a_failed_copy_fails_the_request_and_nothing_half_written_is_read(agent, gpu):
    size = 9 * MiB  # three chunks: one copy fails, the others may land
    data = pattern(size, 21)
    dptr = gpu.alloc(size)
    gpu.upload(dptr, data)
    agent.reg_vram(dptr, size)
    key = unique_key("copyfail")
    dev = agent.reg_obj(key, size)
    gpu.control("fail cuMemcpyDtoHAsync_v2 1")
    refused(lambda: agent.xfer("WRITE", [(dptr, size, 0)], [(0, size, dev)], mem="VRAM"))
    # Whatever chunks landed, the key is not whole: absent to queryMem, a miss to a read.
    assert agent.query([key]) == [None]
    refused(lambda: agent.get(dev, size))
    # The next write of the same buffer succeeds and reads back.
    agent.xfer("WRITE", [(dptr, size, 0)], [(0, size, dev)], mem="VRAM")
    assert_same(vram_get(agent, gpu, dev, size), data, "after a failed copy")
    # A read whose copy into the GPU fails is a failed read.
    gpu.control("fail cuMemcpyHtoDAsync_v2 1")
    out = gpu.alloc(size)
    agent.reg_vram(out, size)
    refused(lambda: agent.xfer("READ", [(out, size, 0)], [(0, size, dev)], mem="VRAM"))


def test_a_timed_out_read_leaves_its_gpu_buffer_untouched(make_agent, gpu, sim):
    agent = make_agent({"read_timeout_ms": "300"})
    size = 1 * MiB
    dev, _ = vram_put(agent, gpu, unique_key("late"), pattern(size, 5))
    out = gpu.alloc(size)
    sentinel = np.full(size, 0xA5, dtype=np.uint8)
    gpu.upload(out, sentinel)
    agent.reg_vram(out, size)
    before = gpu.stats()["htod"]
    sim.control("latency 1500000")  # microseconds
    try:
        with pytest.raises(daoskit.backend_error()):
            agent.xfer("READ", [(out, size, 0)], [(0, size, dev)], mem="VRAM")
        time.sleep(2.0)  # DAOS answers the read now, into the plugin's staging buffer only
    finally:
        sim.control("latency 0")
    assert gpu.stats()["htod"] == before, "a copy into the GPU ran after the read ended"
    assert_same(gpu.download(out, size), sentinel, "the GPU buffer after the late answer")


def test_the_gpu_check_script_runs_on_the_stand_in(nixl_env):
    """ci/gpu-check.sh's check (tests/gpu/gpu_check.py), on the stand-in and this venv's NIXL,
    so that the script a GPU host runs stays working between GPU runs."""
    repo = Path(__file__).resolve().parents[2]
    script = repo / "tests" / "gpu" / "gpu_check.py"
    cmd = [sys.executable, str(script), "--plugin-dir", nixl_env, "--daos-sim", str(daoskit.SIM_SO)]
    cmd += [
        "--memory",
        "sim",
        "--cuda-sim",
        str(daoskit.CUDA_SIM_SO),
        "--nixl",
        "nixl_cu12",
        "--keys",
        "8",
        "--passes",
        "1",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["failed"] == [] and result["VRAM"]["read_gbs"] > 0, result


def test_pinned_staging_is_bounded_and_given_back(gpu):
    """The staging buffers that carry GPU bytes are page-locked (the driver copies them by DMA),
    at most stage_bytes of them, and unpinned when the backend goes."""
    # An earlier test's agent that an exception's traceback still references is destroyed only
    # by the collector, which may run in the middle of this test and unpin that agent's staging:
    # let it run first, so the counts below are this backend's alone.
    gc.collect()
    before = gpu.stats()["pinned_bytes"]
    cap = 16 * MiB
    agent = daoskit.DaosAgent(params={"stage_bytes": str(cap)})
    try:
        size = 9 * MiB  # three chunks, in flight together
        for i in range(3):
            data = pattern(size, 40 + i)
            dev, _ = vram_put(agent, gpu, unique_key("pin"), data)
            assert_same(vram_get(agent, gpu, dev, size), data, "pinned round trip")
        pinned = gpu.stats()["pinned_bytes"] - before
        assert 0 < pinned <= cap, pinned
    finally:
        agent.close()
    gc.collect()
    assert gpu.stats()["pinned_bytes"] == before, "pinned staging left behind by a closed backend"


def test_the_callers_cuda_context_is_left_as_it_was(agent, gpu):
    """Registration and posting run driver calls on the caller's thread: its current context
    (which device PyTorch works on) is what it was before each call."""
    size = 1 * MiB
    dptr = gpu.alloc(size)
    gpu.upload(dptr, pattern(size, 8))
    gpu.leave()
    agent.reg_vram(dptr, size)
    assert gpu.current() == 0, "registerMem left a context current"
    dev = agent.reg_obj(unique_key("ctx"), size)
    agent.xfer("WRITE", [(dptr, size, 0)], [(0, size, dev)], mem="VRAM")
    agent.xfer("READ", [(dptr, size, 0)], [(0, size, dev)], mem="VRAM")
    assert gpu.current() == 0, "a transfer left a context current on the caller's thread"
