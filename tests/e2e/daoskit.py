# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Helpers for driving the DAOS plugin through the real NIXL agent against daos-sim.

Shared by the end-to-end tests (tests/e2e) and the benchmarks in bench/ (kv_bench.py and the
scripts built on it).

Order matters: NIXL's plugin manager is a process singleton created with the first agent, so
`prepare_environment()` must run before the first `nixl_agent` is constructed.
"""

from __future__ import annotations

import ctypes
import glob
import itertools
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
RELEASE = REPO / "target" / "release"
PLUGIN_SO = RELEASE / "libplugin_DAOS.so"
SIM_SO = RELEASE / "libdaos_sim.so"
# The CUDA driver stand-in (tests/cuda-sim): the plugin loads it as its libcuda
# (NIXL_DAOS_LIBCUDA), and `Gpu` below drives the same instance.
CUDA_SIM_SO = RELEASE / "libcuda_sim.so"
BACKEND = "DAOS"

# Testbed mode (ci/e2e-testbed.sh): the tests run against a real DAOS pool named by DAOS_POOL and
# DAOS_CONT, through the libdaos in NIXL_DAOS_LIBDAOS (default libdaos.so.2); tests that need
# daos-sim's controls or counters are skipped.
TESTBED = os.environ.get("NIXL_DAOS_TESTBED") == "1"
if TESTBED:
    SIM_POOL, SIM_CONT = os.environ.get("DAOS_POOL", ""), os.environ.get("DAOS_CONT", "")
    LIBDAOS = os.environ.get("NIXL_DAOS_LIBDAOS", "libdaos.so.2")
else:
    SIM_POOL, SIM_CONT = "sim", "kv"
    LIBDAOS = str(SIM_SO)

_plugin_dir: str | None = None


def _wheel_dirs() -> tuple[Path, Path]:
    """(nixl_cu12.libs, .nixl_cu12.mesonpy.libs) of the installed wheel."""
    import nixl_cu12

    site = Path(nixl_cu12.__file__).resolve().parent.parent
    return site / "nixl_cu12.libs", site / ".nixl_cu12.mesonpy.libs"


def _preload_posix_deps() -> None:
    """The wheel's POSIX plugin, linked from another dir, cannot find its own libraries (its
    RUNPATH is relative to the wheel); load them globally first (NIXL_FACTS 3)."""
    libs, meson = _wheel_dirs()
    paths = [meson / "libfile_utils.so"]
    paths += [Path(p) for p in sorted(glob.glob(str(libs / "liburing-*.so*")))]
    paths += [Path(p) for p in sorted(glob.glob(str(libs / "libaio-*.so*")))]
    for p in paths:
        ctypes.CDLL(str(p), mode=ctypes.RTLD_GLOBAL)


def prepare_environment(with_posix: bool = False) -> str:
    """Point NIXL at a fresh plugin dir holding our plugin (and, if asked, the wheel's POSIX
    plugin), and the plugin at daos-sim's default pool and container. Idempotent; returns the dir.
    """
    global _plugin_dir
    if TESTBED and not (SIM_POOL and SIM_CONT):
        raise RuntimeError("NIXL_DAOS_TESTBED=1 needs DAOS_POOL and DAOS_CONT naming a real pool and container")
    for so in (PLUGIN_SO,) if TESTBED else (PLUGIN_SO, SIM_SO):
        if not so.is_file():
            raise FileNotFoundError(f"{so} is missing: run `cargo build --release` first")
    if _plugin_dir is None:
        _plugin_dir = tempfile.mkdtemp(prefix="nixl-daos-plugins-")
        os.symlink(PLUGIN_SO, os.path.join(_plugin_dir, "libplugin_DAOS.so"))
    posix = os.path.join(_plugin_dir, "libplugin_POSIX.so")
    if with_posix and not os.path.exists(posix):
        _preload_posix_deps()
        os.symlink(_wheel_dirs()[0] / "nixl" / "libplugin_POSIX.so", posix)
    os.environ["NIXL_PLUGIN_DIR"] = _plugin_dir
    os.environ["NIXL_DAOS_LIBDAOS"] = LIBDAOS
    if CUDA_SIM_SO.is_file():
        os.environ.setdefault("NIXL_DAOS_LIBCUDA", str(CUDA_SIM_SO))
    os.environ["DAOS_POOL"] = SIM_POOL
    os.environ["DAOS_CONT"] = SIM_CONT
    return _plugin_dir


def nixl_errors() -> tuple[type[BaseException], ...]:
    """Every typed exception the NIXL bindings raise for a negative status."""
    from nixl_cu12 import _bindings

    return tuple(
        getattr(_bindings, n)
        for n in dir(_bindings)
        if n.startswith("nixl") and n.endswith("Error") and isinstance(getattr(_bindings, n), type)
    )


def backend_error() -> type[BaseException]:
    from nixl_cu12._bindings import nixlBackendError

    return nixlBackendError


# ------------------------------------------------------------------------------------------------
# daos-sim control


class Sim:
    """daos-sim's control API, through the very library instance the plugin dlopen'ed (the same
    absolute path gives the same instance)."""

    def __init__(self, path: Path = SIM_SO):
        self.lib = ctypes.CDLL(str(path))
        self.lib.daos_sim_control.argtypes = [ctypes.c_char_p]
        self.lib.daos_sim_control.restype = ctypes.c_int
        self.lib.daos_sim_stats.argtypes = []
        self.lib.daos_sim_stats.restype = ctypes.c_char_p

    def control(self, cmd: str) -> None:
        rc = self.lib.daos_sim_control(cmd.encode())
        if rc != 0:
            raise RuntimeError(f"daos_sim_control({cmd!r}) returned {rc}")

    def stats(self) -> dict[str, int]:
        return json.loads(self.lib.daos_sim_stats())

    def calm(self) -> None:
        """Undo every fault and delay a test may have switched on."""
        for cmd in (
            "resume",
            "latency 0",
            "bandwidth 0",
            "rpc_cost 0",
            "recx_cost 0",
            "fail DER_IO 0",
            "copy on",
            "capacity 0",
            "reclaim_ms 0",
            "version 2.8.0",
            "deny off",
        ):
            self.control(cmd)


class StatsDelta:
    """`with StatsDelta(sim) as d: ...` then `d["update"]`: counters moved by the block. With
    `sim=None` (real DAOS, no counters) it records nothing."""

    def __init__(self, sim: Sim | None):
        self.sim = sim
        self.delta: dict[str, int] = {}

    def __enter__(self) -> StatsDelta:
        self.before = self.sim.stats() if self.sim else {}
        return self

    def __exit__(self, *exc) -> None:
        if self.sim:
            after = self.sim.stats()
            self.delta = {k: after[k] - self.before.get(k, 0) for k in after}

    def __getitem__(self, k: str) -> int:
        return self.delta[k]


# ------------------------------------------------------------------------------------------------
# data


def post_reads_left_in_flight(agent, dev: int, size: int, n: int):
    """Posts n READs of OBJ devId `dev` (size bytes each) into fresh registered buffers and
    leaves them in flight: the exit scenarios then let the interpreter free buffers and handles
    in its own order. Returns (buffers, handles); keep them referenced until exit."""
    bufs, handles = [], []
    for _ in range(n):
        buf = np.zeros(size, np.uint8)
        agent.reg_dram(buf)
        bufs.append(buf)
        handles.append(agent.post("READ", [(addr(buf), size, 0)], [(0, size, dev)])[0])
    return bufs, handles


def plugin_params() -> dict[str, str]:
    """The plugin's parameters and their defaults as it lists them to NIXL (get_plugin_params)."""
    from nixl_cu12._api import nixl_agent, nixl_agent_config

    probe = nixl_agent(f"params-probe-{os.getpid()}-{unique_dev_id()}", nixl_agent_config(backends=[]))
    return dict(probe.get_plugin_params(BACKEND))


def unique_key(prefix: str = "k") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def unique_dev_id() -> int:
    """A fresh 63-bit devId (KVBM uses a block hash; the key is its decimal form)."""
    return (uuid.uuid4().int >> 65) or 1


def pattern(nbytes: int, seed: int | None = None) -> np.ndarray:
    """Random bytes, so that a misplaced range cannot compare equal by chance."""
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def addr(arr: np.ndarray, offset: int = 0) -> int:
    return arr.ctypes.data + offset


def kvbm_layer_separate(buf: np.ndarray, dev_ids: list[int], layers: int, layer_bytes: int):
    """KVBM's layer-separate layout: one key per block, one descriptor per layer at increasing
    offsets in the object; in DRAM the layers lie apart (layer l of block b at
    (l * blocks + b) * layer_bytes). Returns (DRAM descriptors, OBJ descriptors)."""
    blocks = len(dev_ids)
    assert buf.nbytes >= blocks * layers * layer_bytes
    local, remote = [], []
    for b, dev in enumerate(dev_ids):
        for layer in range(layers):
            local.append((addr(buf, (layer * blocks + b) * layer_bytes), layer_bytes, 0))
            remote.append((layer * layer_bytes, layer_bytes, dev))
    return local, remote


# ------------------------------------------------------------------------------------------------
# GPU memory


class Gpu:
    """Device memory through the CUDA driver API of the library the plugin loads
    (NIXL_DAOS_LIBCUDA; the stand-in in CI, libcuda.so.1 on a GPU host): alloc, fill, read back.
    The stand-in's controls (`control`, `stats`) exist only on it."""

    def __init__(self, path: str | None = None, device: int = 0):
        self.lib = ctypes.CDLL(path or os.environ.get("NIXL_DAOS_LIBCUDA", str(CUDA_SIM_SO)))
        u64, sz, vp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p
        for name, args in (
            ("cuInit", [ctypes.c_uint]),
            ("cuDevicePrimaryCtxRetain", [ctypes.POINTER(vp), ctypes.c_int]),
            ("cuCtxSetCurrent", [vp]),
            ("cuMemAlloc_v2", [ctypes.POINTER(u64), sz]),
            ("cuMemFree_v2", [u64]),
            ("cuMemcpyHtoD_v2", [u64, vp, sz]),
            ("cuMemcpyDtoH_v2", [vp, u64, sz]),
        ):
            getattr(self.lib, name).argtypes = args
            getattr(self.lib, name).restype = ctypes.c_int
        self.device = device
        self._ok("cuInit", self.lib.cuInit(0))
        self.ctx = vp()
        self._ok("cuDevicePrimaryCtxRetain", self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), device))

    def _ok(self, call: str, rc: int) -> None:
        if rc != 0:
            raise RuntimeError(f"{call} returned CUDA error {rc}")

    def _enter(self) -> None:
        self._ok("cuCtxSetCurrent", self.lib.cuCtxSetCurrent(self.ctx))

    def alloc(self, nbytes: int) -> int:
        self._enter()
        p = ctypes.c_uint64()
        self._ok("cuMemAlloc_v2", self.lib.cuMemAlloc_v2(ctypes.byref(p), nbytes))
        return p.value

    def free(self, dptr: int) -> None:
        self._ok("cuMemFree_v2", self.lib.cuMemFree_v2(dptr))

    def upload(self, dptr: int, data: np.ndarray) -> None:
        self._enter()
        self._ok("cuMemcpyHtoD_v2", self.lib.cuMemcpyHtoD_v2(dptr, data.ctypes.data, data.nbytes))

    def download(self, dptr: int, nbytes: int) -> np.ndarray:
        self._enter()
        out = np.empty(nbytes, dtype=np.uint8)
        self._ok("cuMemcpyDtoH_v2", self.lib.cuMemcpyDtoH_v2(out.ctypes.data, dptr, nbytes))
        return out

    def current(self) -> int:
        """The calling thread's current context (0: none)."""
        self.lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        c = ctypes.c_void_p()
        self._ok("cuCtxGetCurrent", self.lib.cuCtxGetCurrent(ctypes.byref(c)))
        return c.value or 0

    def leave(self) -> None:
        """No context current on the calling thread."""
        self._ok("cuCtxSetCurrent", self.lib.cuCtxSetCurrent(None))

    def control(self, cmd: str) -> None:
        self.lib.cuda_sim_control.argtypes = [ctypes.c_char_p]
        if self.lib.cuda_sim_control(cmd.encode()) != 0:
            raise RuntimeError(f"cuda_sim_control({cmd!r}) refused")

    def stats(self) -> dict[str, int]:
        self.lib.cuda_sim_stats.restype = ctypes.c_char_p
        return json.loads(self.lib.cuda_sim_stats())


# ------------------------------------------------------------------------------------------------
# agent


class TransferTimeout(AssertionError):
    pass


class DaosAgent:
    """A NIXL agent with the DAOS backend, tracking what it registers so `close()` can undo it.

    Descriptors use the plain NIXL shapes: DRAM `(addr, len, 0)`, OBJ `(offset, len, devId)`.
    """

    _dev_ids = itertools.count(1 << 40)

    def __init__(self, name: str | None = None, params: dict | None = None, sync_mode=None):
        from nixl_cu12._api import nixl_agent, nixl_agent_config

        prepare_environment()
        self.name = name or unique_key("agent")
        conf = nixl_agent_config(backends=[], sync_mode=sync_mode)
        self.agent = nixl_agent(self.name, conf)
        params = dict(params or {})
        if not TESTBED:
            # daos-sim's counters are asserted RPC by RPC, and eviction's index writes (every
            # 200 ms, in the background) would move them: on daos-sim eviction is off unless a
            # test turns it on (test_evict.py). The real pass keeps the default (on).
            params.setdefault("evict", "false")
        self.agent.create_backend(BACKEND, {k: str(v) for k, v in params.items()})
        self._regs: list = []
        self._obj_regs: dict[int, object] = {}
        self._keep: list = []  # buffers registered here stay alive as long as the agent

    # -- registration --
    def reg_dram(self, arr: np.ndarray):
        descs = self.agent.register_memory([(addr(arr), arr.nbytes, 0, "")], "DRAM", backends=[BACKEND])
        self._regs.append(descs)
        self._keep.append(arr)
        return descs

    def reg_vram(self, dptr: int, nbytes: int, device: int = 0):
        """Registers device memory (devId: the CUDA device ordinal)."""
        descs = self.agent.register_memory([(dptr, nbytes, device, "")], "VRAM", backends=[BACKEND])
        self._regs.append(descs)
        return descs

    def reg_obj(self, key: str, length: int, dev_id: int | None = None) -> int:
        """Registers one OBJ key (`key=""`: the key is the decimal devId); returns its devId."""
        dev_id = next(self._dev_ids) if dev_id is None else dev_id
        descs = self.agent.register_memory([(0, length, dev_id, key)], "OBJ", backends=[BACKEND])
        self._regs.append(descs)
        self._obj_regs[dev_id] = descs
        return dev_id

    def dereg_obj(self, dev_id: int) -> None:
        self.dereg(self._obj_regs.pop(dev_id))

    def dereg(self, descs) -> None:
        self.agent.deregister_memory(descs, backends=[BACKEND])
        self._regs.remove(descs)

    # -- transfers --
    def post(self, op: str, local: list[tuple], remote: list[tuple], mem: str = "DRAM"):
        """initialize_xfer + transfer; returns (handle, first state). `mem`: the local memory
        type (DRAM, or VRAM with devId the CUDA device)."""
        h = self.agent.initialize_xfer(
            op, self.agent.get_xfer_descs(local, mem), self.agent.get_xfer_descs(remote, "OBJ"), self.name
        )
        try:
            return h, self.agent.transfer(h)
        except BaseException:
            self.release(h)
            raise

    def wait(self, handle, state: str = "PROC", timeout: float = 20.0) -> float:
        """Polls (1 ms) until DONE; returns the seconds waited. Errors raise as NIXL raises them."""
        t0 = time.monotonic()
        while state != "DONE":
            if state == "ERR":
                raise AssertionError("transfer state ERR without a typed exception")
            if time.monotonic() - t0 > timeout:
                raise TransferTimeout(f"transfer not done after {timeout} s (state {state})")
            time.sleep(0.001)
            state = self.agent.check_xfer_state(handle)
        return time.monotonic() - t0

    def release(self, handle) -> None:
        self.agent.release_xfer_handle(handle)

    def run(self, handle, timeout: float = 20.0) -> float:
        """transfer + wait + release of a created handle; returns its wall time in seconds."""
        t0 = time.monotonic()
        try:
            self.wait(handle, self.agent.transfer(handle), timeout)
        finally:
            self.release(handle)
        return time.monotonic() - t0

    def xfer(self, op: str, local: list[tuple], remote: list[tuple], timeout: float = 20.0, mem: str = "DRAM") -> float:
        """One whole transfer (initialize_xfer, transfer, wait, release); returns its wall time."""
        t0 = time.monotonic()
        h, state = self.post(op, local, remote, mem)
        try:
            self.wait(h, state, timeout)
        finally:
            self.release(h)
        return time.monotonic() - t0

    def prep_dram(self, local: list[tuple]):
        return self.agent.prep_xfer_dlist("", local, "DRAM")

    def prep_obj(self, remote: list[tuple]):
        return self.agent.prep_xfer_dlist(self.name, remote, "OBJ")

    def prepped(self, op: str, lh, lidx: list[int], rh, ridx: list[int], timeout: float = 20.0) -> float:
        """make_prepped_xfer on prepped lists, then run it; returns its wall time."""
        return self.run(self.agent.make_prepped_xfer(op, lh, lidx, rh, ridx), timeout)

    def query(self, keys: list[str]) -> list[dict | None]:
        return self.agent.query_memory([(0, 0, 0, k) for k in keys], BACKEND, mem_type="OBJ")

    # -- whole-object convenience --
    def put(self, key: str, data: np.ndarray, dev_id: int | None = None, reg_len: int | None = None) -> int:
        """Registers `key` (reg_len bytes, default data's length), writes data at offset 0;
        returns the devId."""
        self.reg_dram(data)
        dev = self.reg_obj(key, reg_len or data.nbytes, dev_id)
        self.xfer("WRITE", [(addr(data), data.nbytes, 0)], [(0, data.nbytes, dev)])
        return dev

    def get(self, dev_id: int, nbytes: int, offset: int = 0) -> np.ndarray:
        """Reads nbytes at offset of a registered key into a new buffer."""
        out = np.zeros(nbytes, dtype=np.uint8)
        self.reg_dram(out)
        self.xfer("READ", [(addr(out), nbytes, 0)], [(offset, nbytes, dev_id)])
        return out

    def close(self) -> None:
        for descs in reversed(self._regs):
            try:
                self.agent.deregister_memory(descs, backends=[BACKEND])
            except Exception:
                pass
        self._regs.clear()
        self._keep.clear()
        self.agent = None


def assert_same(got: np.ndarray, want: np.ndarray, what: str = "data") -> None:
    """Equality of two byte buffers, naming the first differing offset."""
    assert got.nbytes == want.nbytes, f"{what}: {got.nbytes} bytes, expected {want.nbytes}"
    diff = np.flatnonzero(got != want)
    assert diff.size == 0, f"{what}: {diff.size} bytes differ, first at offset {diff[0]}"


def lane_threads() -> list[str]:
    """Names of this process's threads that belong to the plugin's I/O lanes."""
    names = []
    for comm in glob.glob("/proc/self/task/*/comm"):
        try:
            name = Path(comm).read_text().strip()
        except OSError:
            continue
        if name.startswith("nixl-daos-lane"):
            names.append(name)
    return names
