# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin's VRAM path on a GPU, through NIXL's Python agent, against daos-sim (run by
ci/gpu-check.sh on a machine with an NVIDIA GPU and PyTorch). Also runs on a host without a GPU
against the CUDA driver stand-in (--memory sim), which is how it is checked before GPU time.

It registers device memory (PyTorch tensors), writes keys from it and reads them back into
fresh device memory, comparing every byte on the device; reads a VRAM-written key into DRAM and
a DRAM-written key into VRAM; writes a KVBM layer-separate batch from one device buffer; checks
that a read that times out leaves its device buffer untouched after DAOS answers late; and
prints VRAM and DRAM throughput side by side (median of the passes, one run). Ends with one JSON
line; exits 1 on any failed check.

  python tests/gpu/gpu_check.py --plugin-dir DIR --daos-sim LIB [--memory torch|sim]
      [--nixl nixl_cu13] [--keys 64] [--mib 4] [--passes 3]"""

import argparse
import ctypes
import importlib
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--plugin-dir", required=True, help="a directory holding libplugin_DAOS.so")
p.add_argument("--daos-sim", required=True, help="libdaos_sim.so")
p.add_argument("--memory", choices=["torch", "sim"], default="torch")
p.add_argument("--cuda-sim", help="libcuda_sim.so (--memory sim)")
p.add_argument("--nixl", default="nixl_cu13", help="NIXL's Python package (nixl_cu13, nixl_cu12)")
p.add_argument("--keys", type=int, default=64)
p.add_argument("--mib", type=int, default=4)
p.add_argument("--passes", type=int, default=3)
args = p.parse_args()

os.environ["NIXL_PLUGIN_DIR"] = args.plugin_dir
os.environ["NIXL_DAOS_LIBDAOS"] = args.daos_sim
if args.memory == "sim":
    os.environ["NIXL_DAOS_LIBCUDA"] = args.cuda_sim
api = importlib.import_module(f"{args.nixl}._api")
bindings = importlib.import_module(f"{args.nixl}._bindings")
ERRORS = tuple(
    getattr(bindings, n)
    for n in dir(bindings)
    if n.startswith("nixl") and n.endswith("Error") and isinstance(getattr(bindings, n), type)
)
FAILED: list[str] = []
RESULT: dict = {"memory": args.memory}


def check(ok: bool, what: str) -> None:
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        FAILED.append(what)


def pattern(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


class TorchMem:
    """Device memory as PyTorch tensors; comparisons run on the device."""

    def __init__(self):
        import torch

        self.torch = torch
        assert torch.cuda.is_available(), "PyTorch sees no CUDA device"
        self.device = torch.cuda.current_device()
        RESULT["gpu"] = torch.cuda.get_device_name(self.device)

    def alloc(self, n: int, data: np.ndarray | None = None):
        t = self.torch.empty(n, dtype=self.torch.uint8, device=f"cuda:{self.device}")
        if data is not None:
            t.copy_(self.torch.from_numpy(data))
        self.torch.cuda.synchronize()
        return t

    def ptr(self, t) -> int:
        return t.data_ptr()

    def equal(self, a, b) -> bool:
        # On a stream of its own, not the default one: bytes a read reported DONE must be on
        # the device for any stream, not only for work ordered after the plugin's copies.
        s = self.torch.cuda.Stream()
        with self.torch.cuda.stream(s):
            same = self.torch.equal(a, b)
        s.synchronize()
        return bool(same)

    def host(self, t) -> np.ndarray:
        return t.cpu().numpy()


class SimMem:
    """Device memory of the CUDA driver stand-in (compared on the host: it has no device)."""

    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        u64, sz, vp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p
        self.lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(vp), ctypes.c_int]
        self.lib.cuCtxSetCurrent.argtypes = [vp]
        self.lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(u64), sz]
        self.lib.cuMemcpyHtoD_v2.argtypes = [u64, vp, sz]
        self.lib.cuMemcpyDtoH_v2.argtypes = [vp, u64, sz]
        assert self.lib.cuInit(0) == 0
        self.ctx = vp()
        assert self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), 0) == 0
        self.device = 0
        RESULT["gpu"] = "cuda-sim (host memory)"

    def alloc(self, n: int, data: np.ndarray | None = None):
        assert self.lib.cuCtxSetCurrent(self.ctx) == 0
        d = ctypes.c_uint64()
        assert self.lib.cuMemAlloc_v2(ctypes.byref(d), n) == 0
        if data is not None:
            assert self.lib.cuMemcpyHtoD_v2(d.value, data.ctypes.data, n) == 0
        return (d.value, n)

    def ptr(self, t) -> int:
        return t[0]

    def host(self, t) -> np.ndarray:
        assert self.lib.cuCtxSetCurrent(self.ctx) == 0
        out = np.empty(t[1], dtype=np.uint8)
        assert self.lib.cuMemcpyDtoH_v2(out.ctypes.data, t[0], t[1]) == 0
        return out

    def equal(self, a, b) -> bool:
        return np.array_equal(self.host(a), self.host(b))


mem = TorchMem() if args.memory == "torch" else SimMem(args.cuda_sim)
sim = ctypes.CDLL(args.daos_sim)
sim.daos_sim_control.argtypes = [ctypes.c_char_p]


class Agent:
    def __init__(self, name: str, **params: str):
        self.name = name
        self.a = api.nixl_agent(name, api.nixl_agent_config(backends=[]))
        base = {"pool": "sim", "container": "gpucheck", "create_container": "true", "evict": "false"}
        self.a.create_backend("DAOS", {**base, **params})
        self.devs = iter(range(1 << 40, 1 << 41))

    def vram(self, t, n: int) -> None:
        self.a.register_memory([(mem.ptr(t), n, mem.device, "")], "VRAM", backends=["DAOS"])

    def dram(self, arr: np.ndarray) -> None:
        self.a.register_memory([(arr.ctypes.data, arr.nbytes, 0, "")], "DRAM", backends=["DAOS"])

    def key(self, name: str, n: int) -> int:
        dev = next(self.devs)
        self.a.register_memory([(0, n, dev, name)], "OBJ", backends=["DAOS"])
        return dev

    def post(self, op: str, local: list, remote: list, kind: str):
        h = self.a.initialize_xfer(
            op, self.a.get_xfer_descs(local, kind), self.a.get_xfer_descs(remote, "OBJ"), self.name
        )
        return h, self.a.transfer(h)

    def wait(self, h, state, timeout: float = 60.0) -> None:
        t0 = time.monotonic()
        try:
            while state != "DONE":
                if state == "ERR" or time.monotonic() - t0 > timeout:
                    raise RuntimeError(f"transfer ended {state}")
                time.sleep(0.0005)
                state = self.a.check_xfer_state(h)
        finally:
            self.a.release_xfer_handle(h)

    def xfer(self, op: str, local: list, remote: list, kind: str) -> None:
        self.wait(*self.post(op, local, remote, kind))


def throughput(agent: Agent, kind: str, n: int, size: int) -> tuple[float, float]:
    """GB/s of one write pass and one read pass of n keys (all requests in flight at once)."""
    if kind == "VRAM":
        src, dst = mem.alloc(n * size, pattern(n * size, 5)), mem.alloc(n * size)
        agent.vram(src, n * size)
        agent.vram(dst, n * size)
        at = lambda t, i: mem.ptr(t) + i * size  # noqa: E731
    else:
        # Touched now, so that first-touch page faults are not timed.
        src, dst = pattern(n * size, 5), np.full(n * size, 0, dtype=np.uint8)
        agent.dram(src)
        agent.dram(dst)
        at = lambda t, i: t.ctypes.data + i * size  # noqa: E731
    devs = [agent.key(f"tp-{kind}-{time.monotonic_ns()}-{i}", size) for i in range(n)]
    rates = []
    for op, buf in (("WRITE", src), ("READ", dst)):
        t0 = time.perf_counter()
        hs = [
            agent.post(op, [(at(buf, i), size, 0 if kind == "DRAM" else mem.device)], [(0, size, d)], kind)
            for i, d in enumerate(devs)
        ]
        for h, state in hs:
            agent.wait(h, state)
        rates.append(n * size / (time.perf_counter() - t0) / 1e9)
    ok = mem.equal(src, dst) if kind == "VRAM" else np.array_equal(src, dst)
    check(ok, f"{kind} throughput pass: {n} keys of {size >> 20} MiB read back equal")
    return rates[0], rates[1]


def main() -> None:
    t_start = time.monotonic()
    agent = Agent("gpu-check")
    mems = sorted(agent.a.get_backend_mem_types("DAOS"))
    check("VRAM_SEG" in mems, f"the backend lists VRAM ({mems})")

    # Round trips, each compared on the device: one chunk, several chunks, an odd size.
    for size in (4096, 9 << 20, (1 << 20) + 17):
        data = pattern(size, size % 251)
        src, out = mem.alloc(size, data), mem.alloc(size)
        agent.vram(src, size)
        agent.vram(out, size)
        dev = agent.key(f"rt-{size}", size)
        agent.xfer("WRITE", [(mem.ptr(src), size, mem.device)], [(0, size, dev)], "VRAM")
        agent.xfer("READ", [(mem.ptr(out), size, mem.device)], [(0, size, dev)], "VRAM")
        check(mem.equal(src, out), f"{size} bytes VRAM -> DAOS -> VRAM, every byte equal")
        host = np.zeros(size, dtype=np.uint8)
        agent.dram(host)
        agent.xfer("READ", [(host.ctypes.data, size, 0)], [(0, size, dev)], "DRAM")
        check(np.array_equal(host, data), f"{size} bytes VRAM -> DAOS -> DRAM equal")

    # KVBM layer-separate from one device buffer: block b's layer l at (l * blocks + b).
    blocks, layers, lb = 16, 8, 128 << 10
    whole = pattern(blocks * layers * lb, 9)
    buf = mem.alloc(whole.nbytes, whole)
    agent.vram(buf, whole.nbytes)
    devs = [agent.key(f"kvbm-{b}", layers * lb) for b in range(blocks)]
    local = [(mem.ptr(buf) + (lay * blocks + b) * lb, lb, mem.device) for b in range(blocks) for lay in range(layers)]
    remote = [(lay * lb, lb, devs[b]) for b in range(blocks) for lay in range(layers)]
    agent.xfer("WRITE", local, remote, "VRAM")
    back = np.zeros(layers * lb, dtype=np.uint8)
    agent.dram(back)
    good = 0
    for b, dev in enumerate(devs):
        agent.xfer("READ", [(back.ctypes.data, layers * lb, 0)], [(0, layers * lb, dev)], "DRAM")
        want = np.concatenate([whole[(lay * blocks + b) * lb : (lay * blocks + b + 1) * lb] for lay in range(layers)])
        good += bool(np.array_equal(back, want))
    check(good == blocks, f"KVBM layer-separate batch from VRAM: {good}/{blocks} blocks equal")

    # A read that times out: its device buffer is untouched after DAOS answers late.
    late = Agent("gpu-check-late", read_timeout_ms="300", container="gpucheck")
    size = 1 << 20
    src = mem.alloc(size, pattern(size, 3))
    late.vram(src, size)
    dev = late.key("late", size)
    late.xfer("WRITE", [(mem.ptr(src), size, mem.device)], [(0, size, dev)], "VRAM")
    sentinel = np.full(size, 0xA5, dtype=np.uint8)
    out = mem.alloc(size, sentinel)
    keep = mem.alloc(size, sentinel)
    late.vram(out, size)
    sim.daos_sim_control(b"latency 1500000")
    try:
        late.xfer("READ", [(mem.ptr(out), size, mem.device)], [(0, size, dev)], "VRAM")
        check(False, "a read slower than its deadline failed")
    except (RuntimeError, *ERRORS):
        check(True, "a read slower than its deadline failed")
    time.sleep(2.0)
    sim.daos_sim_control(b"latency 0")
    check(mem.equal(out, keep), "its device buffer is untouched after DAOS answered late")

    # Throughput, side by side.
    n, size = args.keys, args.mib << 20
    rows = {"DRAM": [], "VRAM": []}
    for _ in range(args.passes):
        for kind in ("DRAM", "VRAM"):
            rows[kind].append(throughput(agent, kind, n, size))
    print(f"\nthroughput, {n} keys x {args.mib} MiB, median of {args.passes} passes (GB/s; daos-sim in process):")
    print(f"{'':6}{'write':>10}{'read':>10}")
    for kind, r in rows.items():
        w, rd = statistics.median(x[0] for x in r), statistics.median(x[1] for x in r)
        RESULT[kind] = {"write_gbs": round(w, 2), "read_gbs": round(rd, 2)}
        print(f"{kind:6}{w:10.2f}{rd:10.2f}")
    RESULT["seconds"] = round(time.monotonic() - t_start, 1)
    RESULT["failed"] = FAILED
    print(json.dumps(RESULT))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
