# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The contenders of bench/kv_bench.py: the DAOS plugin on daos-sim (with and without the modeled
network) or on a real pool, the reference C++ plugin on a real pool, NIXL's POSIX backend on
tmpfs or on a dfuse mount, and numpy's memcpy; build_contenders turns --contenders into them."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench import real_pool
from bench.kv_harness import Harness
from bench.kv_net import NetModel
from bench.kv_workloads import Buffers, MiB, Workload
from tests.e2e import daoskit


def calm(sim: daoskit.Sim) -> None:
    """No fault, no delay, no modeled network (latency, bandwidth and rpc_cost back to 0)."""
    sim.calm()


class Contender:
    name = ""
    kind = ""  # "daos" (ours), "posix", "peer" (another DAOS backend: the reference C++ plugin), "memcpy"
    net = None  # the modeled network of a DAOS "+net" contender

    def open(self, bufs: Buffers) -> None: ...

    def close(self) -> None: ...

    # the modeled network, off for set-up (the untimed first write) and on for the timed reps
    def net_on(self) -> None: ...

    def net_off(self) -> None: ...


class NixlContender(Contender):
    backend = ""
    mem = ""  # remote memory type

    def __init__(self, name: str, params: dict[str, str]):
        self.name, self.params = name, params
        self.agent = None
        self.dram = None

    def open(self, bufs: Buffers) -> None:
        from nixl_cu12._api import nixl_agent, nixl_agent_config

        self.agent = nixl_agent(f"bench-{self.name.replace(' ', '-')}", nixl_agent_config(backends=[]))
        self.agent.create_backend(self.backend, self.params)
        self.dram = self.agent.register_memory(
            [(bufs.src.ctypes.data, bufs.src.nbytes, 0, ""), (bufs.dst.ctypes.data, bufs.dst.nbytes, 0, "")],
            "DRAM",
            backends=[self.backend],
        )

    def close(self) -> None:
        if self.agent is not None:
            if self.dram is not None:
                self.agent.deregister_memory(self.dram, backends=[self.backend])
            self.dram = None
            self.agent = None  # the C++ agent (and its backend engine) goes with the last reference

    # storage of one workload: returns devIds (one per key); drop_storage frees it
    def make_storage(self, w: Workload) -> list[int]:
        raise NotImplementedError

    def drop_storage(self) -> None:
        raise NotImplementedError

    def rpc_counts(self) -> dict[str, int] | None:
        return None

    def renew_storage(self, w: Workload) -> list[int]:
        """Keys never written, for the next new-key write (the old ones are freed first where the
        storage allows it)."""
        self.drop_storage()
        return self.make_storage(w)

    def requests(self, w: Workload, buf: np.ndarray, devs: list[int]) -> list:
        """One (local, remote) descriptor-list pair per key, built before the clock starts."""
        off = w.local_offsets()
        base = np.uint64(buf.ctypes.data)
        blk = np.uint64(w.block)
        rem_off = np.arange(w.layers, dtype=np.uint64) * blk
        out = []
        for k in range(w.keys):
            local = np.stack([base + off[k], np.full(w.layers, blk), np.zeros(w.layers, np.uint64)], 1)
            remote = np.stack([rem_off, np.full(w.layers, blk), np.full(w.layers, np.uint64(devs[k]))], 1)
            out.append((self.agent.get_xfer_descs(local, "DRAM"), self.agent.get_xfer_descs(remote, self.mem)))
        return out


# The plugin's self-checking values (src/record.rs): beside its bytes every dkey (a key's chunk)
# holds a CRC-32C of SUM_BYTES per BLOCK of them (an array, written and fetched with the bytes)
# and a RECORD_BYTES record (a single value, fetched with them; daos-sim counts the single values
# written apart from bytes_written).
BLOCK, SUM_BYTES, RECORD_BYTES = 64 << 10, 4, 24


class DaosContender(NixlContender):
    kind, backend, mem = "daos", daoskit.BACKEND, "OBJ"
    _dev = 1 << 40
    _chunk_bytes: int | None = None  # the plugin's default chunk_bytes, asked once

    def __init__(self, name: str, params: dict[str, str], sim: daoskit.Sim, net: NetModel | None):
        # daos-sim's RPC and byte counters are checked per rep, and eviction's index writes
        # (every 200 ms, in the background) would move them; into an empty pool eviction does
        # nothing else. The real-engine contenders keep the default (on).
        super().__init__(name, {"evict": "false", **params})
        self.sim, self.net = sim, net
        self.objs = None

    def open(self, bufs: Buffers) -> None:
        self.net_off()
        super().open(bufs)

    def close(self) -> None:
        super().close()
        self.net_off()
        self.sim.control("reset_data")

    def net_on(self) -> None:
        for cmd in self.net.controls() if self.net else ():
            self.sim.control(cmd)

    def net_off(self) -> None:
        calm(self.sim)

    def make_storage(self, w: Workload) -> list[int]:
        devs = list(range(DaosContender._dev, DaosContender._dev + w.keys))
        DaosContender._dev += w.keys
        self.objs = self.agent.register_memory([(0, w.key_bytes, d, "") for d in devs], "OBJ", backends=[self.backend])
        return devs

    def drop_storage(self) -> None:
        self.agent.deregister_memory(self.objs, backends=[self.backend])
        self.objs = None
        self.sim.control("reset_data")

    def rpc_counts(self) -> dict[str, int]:
        return self.sim.stats()

    def moved_bytes(self, w: Workload, read: bool) -> int:
        """What daos-sim counts for one request of every key of `w`: its bytes_written for a
        write (the data and its checksums), its bytes_read for a read (those and the records)."""
        if "chunk_bytes" in self.params:
            chunk = int(self.params["chunk_bytes"])
        else:
            if DaosContender._chunk_bytes is None:
                DaosContender._chunk_bytes = int(daoskit.plugin_params()["chunk_bytes"])
            chunk = DaosContender._chunk_bytes
        chunk = chunk or w.key_bytes  # 0: one dkey per key
        per_key = 0
        for off in range(0, w.key_bytes, chunk):
            n = min(chunk, w.key_bytes - off)
            per_key += n + -(-n // BLOCK) * SUM_BYTES + (RECORD_BYTES if read else 0)
        return w.keys * per_key


class RealPoolContender(NixlContender):
    """A backend on a real DAOS pool (DAOS_POOL). Each workload runs on a container of its own
    (new_container), destroyed after it with the `daos` tool (DAOS_LOCAL_BIN or PATH), since a
    new-key write cannot free the keys of the one before."""

    _dev = 1 << 40

    def __init__(self, name: str, params: dict[str, str]):
        super().__init__(name, params)
        self.objs: list = []
        self.label = None

    def open(self, bufs: Buffers) -> None:
        self.bufs = bufs  # the agent is made per workload, on its container

    def close(self) -> None:
        pass

    def new_container(self, label: str) -> None:
        """Makes container `label` (or has the backend make it) before the agent opens."""
        raise NotImplementedError

    def meta_info(self, dev: int) -> str:
        """The metaInfo of object `dev`'s registration."""
        return ""

    def _register(self, w: Workload) -> list[int]:
        devs = list(range(RealPoolContender._dev, RealPoolContender._dev + w.keys))
        RealPoolContender._dev += w.keys
        self.objs.append(
            self.agent.register_memory(
                [(0, w.key_bytes, d, self.meta_info(d)) for d in devs], self.mem, backends=[self.backend]
            )
        )
        return devs

    def make_storage(self, w: Workload) -> list[int]:
        import uuid

        # Room for two reps of new keys, the overwrite's new versions and slack (a measurement
        # that ran out would see the plugin evict its own keys).
        real_pool.wait_for_space(4 * w.nbytes, self.name)
        self.label = f"kvbench-{uuid.uuid4().hex[:12]}"
        self.new_container(self.label)
        try:
            super().open(self.bufs)
            # The first I/O to a new container opens it on the engine; a KV store did that long ago.
            devs = self._register(Workload("warm", 1, 1, 4096))
            h = Harness(1, 0.001, 600.0)
            for op, buf in (("WRITE", self.bufs.src), ("READ", self.bufs.dst)):
                local = self.agent.get_xfer_descs([(buf.ctypes.data, 4096, 0)], "DRAM")
                h.drive(self.agent, op, [(local, self.agent.get_xfer_descs([(0, 4096, devs[0])], self.mem))])
            return self._register(w)
        except BaseException as e:
            # run_xfer drops the storage only once this returned: free the agent (its backend's
            # threads and handles) and the container here, or they outlive the failure.
            try:
                self.drop_storage()
            except Exception as tidy:  # the first failure is the one to report
                print(f"  warning: {self.name}: tidying up after {type(e).__name__}: {type(tidy).__name__}: {tidy}")
            raise

    def renew_storage(self, w: Workload) -> list[int]:
        return self._register(w)

    def drop_storage(self) -> None:
        try:
            if self.agent is not None:
                for o in self.objs:
                    self.agent.deregister_memory(o, backends=[self.backend])
                super().close()
        finally:
            self.objs.clear()
            self.agent = None  # also when a deregistration failed: the agent goes with its last reference
            real_pool.destroy_container(self.label)


class RealDaosContender(RealPoolContender):
    """The plugin on a real DAOS pool (DAOS_POOL, NIXL_DAOS_LIBDAOS); it creates each container."""

    kind, backend, mem = "daos", daoskit.BACKEND, "OBJ"

    def new_container(self, label: str) -> None:
        self.params = dict(self.params, container=label, create_container="true")


class PeerPlugin(RealPoolContender):
    """Another DAOS plugin for NIXL, built by bench/reference.sh and loaded beside ours under a
    backend name of its own (`backend`; the library at the environment variable `env`)."""

    kind = "peer"
    env = ""

    def __init__(self, name: str, params: dict[str, str]):
        super().__init__(name, params)
        so = os.environ.get(self.env, "")
        if not so or not os.path.isfile(so):
            raise SystemExit(
                f"{name}: {self.env}={so!r} is not a file: build the plugin with "
                f"`bash bench/reference.sh {self.short} SRC` and set {self.env} to the path it prints"
            )
        # Beside ours in the plugin dir: NIXL finds a backend by its file name, libplugin_<name>.so.
        so = os.path.abspath(so)
        link = Path(os.environ["NIXL_PLUGIN_DIR"]) / f"libplugin_{self.backend}.so"
        if link.is_symlink() and os.path.realpath(link) != os.path.realpath(so):
            link.unlink()  # dangling, or another build's
        if not link.is_symlink():
            link.symlink_to(so)


class CppPluginContender(PeerPlugin):
    """The reference C++ plugin (gluesys/nixl-daos, the plugin this project re-creates), built by
    bench/reference.sh and loaded beside ours as NIXL backend DAOSCPP (NIXL_DAOS_CPP_PLUGIN names
    the library), with NIXL_DAOS_THREADS I/O threads (its default 64; ci/bench-real.sh gives it 8)
    and its 60 s event-queue deadline. Its object side
    is FILE: metaInfo "pool/container", devId the object (its id derived from devId), addr the
    offset, which it maps to dkey = addr / 64 MiB and akey = addr % 64 MiB, so a key's
    descriptors go out as one RPC per 64 MiB. It opens but does not create its container, so the
    `daos` tool makes each one."""

    backend, mem, env, short = "DAOSCPP", "FILE", "NIXL_DAOS_CPP_PLUGIN", "cpp"

    def __init__(self, name: str):
        super().__init__(name, {})

    def new_container(self, label: str) -> None:
        real_pool.create_container(label)

    def meta_info(self, dev: int) -> str:
        return f"{os.environ['DAOS_POOL']}/{self.label}"


class DfsPluginContender(PeerPlugin):
    """The libdfs backend of NIXL PR #2261, built by bench/reference.sh and loaded beside ours as
    NIXL backend DAOSDFS (NIXL_DAOS_DFS_PLUGIN names the library), with its defaults (one event
    queue and its progress thread). It keeps each key as a file of a POSIX container through
    libdfs (metaInfo: the file's path in the container, addr: the offset; DFS cuts a file into
    1 MiB chunks on dkeys of their own), the container made by the backend (create_container).
    Its prepXfer opens each file (and creates a new key's), so with prepared handles (the
    default) those opens stay off the clock; --handles per-transfer times them."""

    backend, mem, env, short = "DAOSDFS", "OBJ", "NIXL_DAOS_DFS_PLUGIN", "dfs"

    def __init__(self, name: str):
        super().__init__(name, {})

    def new_container(self, label: str) -> None:
        self.params = {"pool": os.environ["DAOS_POOL"], "container": label, "create_container": "true"}

    def meta_info(self, dev: int) -> str:
        return f"k{dev}"


class PrevPluginContender(PeerPlugin):
    """This plugin as built from an earlier commit (`bash bench/prev.sh REV`), loaded beside the
    current build as NIXL backend DAOSPREV (NIXL_DAOS_PREV_PLUGIN names the library), with its
    defaults and a container of its own per workload: the side-by-side of a change to the data
    path, pass by pass."""

    backend, mem, env, short = "DAOSPREV", "OBJ", "NIXL_DAOS_PREV_PLUGIN", "prev"

    def __init__(self, name: str):
        super().__init__(name, {})

    def new_container(self, label: str) -> None:
        self.params = {"container": label, "create_container": "true"}


class PosixContender(NixlContender):
    kind, backend, mem = "posix", "POSIX", "FILE"

    def __init__(self, name: str, params: dict[str, str], root: Path, on_daos: bool = False):
        super().__init__(name, params)
        self.root = root
        self.on_daos = on_daos  # files on a dfuse mount of DAOS_POOL
        self.fds: list[int] = []
        self.files = None
        self.retired: list[tuple] = []  # (registration, fds) of earlier reps, on DAOS (renew_storage)
        self.made = 0  # file sets made: a set's files are named after it

    def make_storage(self, w: Workload) -> list[int]:
        if self.on_daos:
            real_pool.wait_for_space(4 * w.nbytes, self.name)
        self.root.mkdir(parents=True, exist_ok=True)
        self.made += 1
        for k in range(w.keys):
            self.fds.append(os.open(self.root / f"k{self.made}-{k}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600))
        self.files = self.agent.register_memory(
            [(0, w.key_bytes, fd, "") for fd in self.fds], "FILE", backends=[self.backend]
        )
        return list(self.fds)

    def renew_storage(self, w: Workload) -> list[int]:
        if not self.on_daos:
            return super().renew_storage(w)
        # On DAOS the earlier rep's files stay until drop_storage, as the plugins keep their
        # earlier keys: files unlinked now give their space back only when the engine
        # aggregates, 27-31 s later (bench/RECLAIM_FINDINGS.md), in the middle of the timed reads
        # that follow the last rep, which would slow this contender's reads and no other's.
        self.retired.append((self.files, self.fds))
        self.files, self.fds = None, []
        return self.make_storage(w)

    def drop_storage(self) -> None:
        sets = self.retired + [(self.files, self.fds)]
        self.retired, self.files, self.fds = [], None, []
        for files, fds in sets:
            if files is not None:
                self.agent.deregister_memory(files, backends=[self.backend])
            for fd in fds:
                os.close(fd)
        for p in self.root.glob("k*"):
            p.unlink()


class MemcpyContender(Contender):
    kind = "memcpy"

    def __init__(self, name: str, threads: int):
        self.name, self.threads = name, threads
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def copy(self, bufs: Buffers, nbytes: int) -> None:
        if self.pool is None:
            np.copyto(bufs.dst[:nbytes], bufs.src[:nbytes])
            return
        # threads over chunks: at least 4 per thread so a slow chunk does not idle the others
        size = max(MiB, -(-nbytes // (4 * self.threads)))

        def one(ab):
            np.copyto(bufs.dst[ab[0] : ab[1]], bufs.src[ab[0] : ab[1]])

        list(self.pool.map(one, Buffers.chunks(nbytes, size)))


def dfuse_dir() -> Path:
    """The files of the posix-dfuse contender: under the dfuse mount NIXL_DAOS_DFUSE_DIR names."""
    mnt = os.environ.get("NIXL_DAOS_DFUSE_DIR", "")
    if not mnt or not os.path.ismount(mnt):
        raise SystemExit(
            f"posix-dfuse: NIXL_DAOS_DFUSE_DIR={mnt!r} is not a mount point: mount a POSIX container with dfuse "
            "(ci/bench.sh does: dfuse -m DIR --pool $DAOS_POOL --cont CONT --disable-caching) and point it there"
        )
    return Path(mnt) / f"kv-bench-{os.getpid()}"


def pil4dfs_dir() -> Path:
    """The posix-pil4dfs contender's files: dfuse_dir(), in a process with pil4dfs intercepting."""
    if "libpil4dfs" not in os.environ.get("LD_PRELOAD", "") or os.environ.get("D_IL_NO_BYPASS") != "1":
        raise SystemExit(
            "posix-pil4dfs: run with LD_PRELOAD=<DAOS lib64>/libpil4dfs.so and D_IL_NO_BYPASS=1 (pil4dfs does not "
            "intercept python processes otherwise)"
        )
    return dfuse_dir()


def build_contenders(a, sim, shm: Path, cores: int, net: NetModel | None = None) -> list[Contender]:
    daos_common = {}
    if a.num_queues:
        daos_common["num_queues"] = str(a.num_queues)
    table = {
        # the plugin with its defaults
        "daos-default": lambda: DaosContender("daos default", dict(daos_common), sim, None),
        "daos-default-net": lambda: DaosContender("daos default +net", dict(daos_common), sim, net),
        "real-default": lambda: RealDaosContender("real default", dict(daos_common)),
        # The plugin built from an earlier commit (bench/prev.sh), on the same pool.
        "real-prev": lambda: PrevPluginContender("real prev"),
        # The reference C++ plugin on the same pool (bench/reference.sh builds it from its source).
        "real-cpp": lambda: CppPluginContender("real cpp"),
        # The libdfs backend of NIXL PR #2261 on the same pool (bench/reference.sh dfs builds it).
        "real-dfs": lambda: DfsPluginContender("real dfs"),
        "posix": lambda: PosixContender("posix", {}, shm),
        # NIXL POSIX on a dfuse mount of a POSIX container on the same engine (ci/bench.sh mounts
        # it with caching off, so every read goes to the engine): what a DAOS user would try first.
        "posix-dfuse": lambda: PosixContender("posix dfuse", {}, dfuse_dir(), on_daos=True),
        # The same with DAOS's interception library preloaded (LD_PRELOAD=libpil4dfs.so and
        # D_IL_NO_BYPASS=1: pil4dfs leaves python processes alone otherwise); NIXL POSIX's default
        # libaio queue (its POSIX-AIO and io_uring queues fail on the redirected descriptors).
        "posix-pil4dfs": lambda: PosixContender("posix pil4dfs", {}, pil4dfs_dir(), on_daos=True),
        "posix-uring": lambda: PosixContender("posix uring", {"use_uring": "true"}, shm),
        "memcpy-1t": lambda: MemcpyContender("memcpy 1T", 1),
        "memcpy-nt": lambda: MemcpyContender(f"memcpy {cores}T", cores),
    }
    groups = {
        "daos": ["daos-default", "daos-default-net"],
        "real": ["real-default"],
        "posix": ["posix", "posix-uring"],
        "memcpy": ["memcpy-1t", "memcpy-nt"],
    }
    names: list[str] = []
    for x in a.contenders.split(","):
        x = x.strip()
        for n in groups.get(x, [x]):
            if n not in table:
                raise SystemExit(f"unknown contender {x!r}; known: {', '.join(list(groups) + list(table))}")
            if n not in names:
                names.append(n)
    # memcpy first: the reference every ratio is taken against; and again last, so that the
    # report can tell when the machine's speed changed during the run (the faster counts)
    names.sort(key=lambda n: not n.startswith("memcpy"))
    out = [table[n]() for n in names]
    if a.memcpy_again and any(isinstance(c, MemcpyContender) for c in out) and len(out) > 2:
        out += [MemcpyContender(f"{c.name} (end)", c.threads) for c in out if isinstance(c, MemcpyContender)]
    return out
