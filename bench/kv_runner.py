# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The runs of bench/kv_bench.py: each contender over each workload and op through the harness,
every read verified, plus the untimed warm-up of a fresh real engine."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from bench.kv_contenders import Contender, MemcpyContender, NixlContender, RealDaosContender
from bench.kv_harness import Harness, Row, cpu_now, runq_now, runq_since
from bench.kv_workloads import Buffers, Workload
from tests.e2e import daoskit


class Bench:
    def __init__(self, args, sim: daoskit.Sim | None, bufs: Buffers):
        self.a, self.sim, self.bufs = args, sim, bufs
        self.harness = Harness(args.window, args.poll_ms / 1000.0, args.timeout, args.handles)
        self.rows: list[Row] = []
        self.failures: list[str] = []
        self.unavailable: set[str] = set()  # contenders that could not run: later passes skip them
        self.current_kind = ""  # the kind of the contender running (an abort's hint depends on it)

    def log(self, msg: str) -> None:
        print(f"  {msg}", flush=True)

    def reps_done(self, times: list[float]) -> bool:
        """--reps repetitions, then more while they sum to under --min-time (short workloads);
        fewer (at least one) where they already sum to --max-op-time (the slow +net ones)."""
        if times and sum(times) >= self.a.max_op_time:
            return True
        if len(times) < self.a.reps:
            return False
        return sum(times) >= self.a.min_time or len(times) >= self.a.max_reps

    def check_read(self, c: Contender, w: Workload, row: Row) -> None:
        bad = self.bufs.first_mismatch(w.nbytes)
        if bad is not None:
            row.verified = False
            self.failures.append(f"{c.name} {w.name}: read-back differs from the source at byte {bad}")
            raise RuntimeError(self.failures[-1])

    def run_memcpy(self, c: MemcpyContender, w: Workload) -> None:
        row = Row(c.name, w.name, "copy", w.nbytes, w.descs)
        while not self.reps_done(row.times):
            self.bufs.poison(w)
            q0, c0, t0 = runq_now(), cpu_now(), time.perf_counter()
            c.copy(self.bufs, w.nbytes)
            row.times.append(time.perf_counter() - t0)
            row.cpu.append(cpu_now() - c0)
            row.runq.append(runq_since(q0))
            self.check_read(c, w, row)
        self.rows.append(row)
        self.log(f"{c.name:<18} {w.name:<8} copy  {row.gbps:7.2f} GB/s ({len(row.times)} reps)")

    def run_xfer(self, c: NixlContender, w: Workload) -> None:
        devs = c.make_storage(w)
        h = self.harness
        try:
            if c.net is None:
                # New-key writes, the headline write: each rep writes keys never written, as KV
                # offload writes every block once (storage is allocated inside the clock).
                row, devs = self.time_new_writes(c, w, devs)
                self.rows.append(row)
            reqs = {"overwrite": c.requests(w, self.bufs.src, devs), "read": c.requests(w, self.bufs.dst, devs)}
            # Reads first, of the keys the last new-key write wrote once: KV offload reads blocks
            # it wrote once, and so does bench/ceiling. Read after the overwrites' reps, the same
            # keys came back up to 2x slower on the real engine (26 keys x 64 x 4 KiB after 25
            # overwrites: 0.24-0.29 GB/s, against 0.48-0.51 written once): a fetch resolves
            # every version of its extents until DAOS aggregates them, which the plugin does not
            # cost and the ceiling never meets. The +net contenders write no new keys (below).
            for op in ("read", "overwrite") if c.net is None else ("overwrite", "read"):
                # prepared mode: this op's handles, one per key, made before the clock and
                # reposted by every repetition
                handles = h.make_handles(c.agent, "WRITE" if op == "overwrite" else "READ", reqs[op])
                try:
                    if op == "overwrite" and c.net is not None:
                        # +net contenders time no new-key write: an untimed first write, without
                        # the modeled network, allocates the storage the overwrites then reuse.
                        h.drive(c.agent, "WRITE", reqs[op], handles)
                    c.net_on()
                    try:
                        self.rows.append(self.time_xfer(c, w, op, reqs[op], handles))
                    finally:
                        c.net_off()
                finally:
                    h.release_handles(c.agent, handles)
        finally:
            c.drop_storage()

    def time_new_writes(self, c: NixlContender, w: Workload, devs: list[int]) -> tuple[Row, list[int]]:
        """Timed writes to new keys, fresh storage each rep; returns the row and the last keys."""
        row = Row(c.name, w.name, "write", w.nbytes, w.descs)
        h = self.harness
        while not self.reps_done(row.times):
            if row.times:
                devs = c.renew_storage(w)
            reqs = c.requests(w, self.bufs.src, devs)
            handles = h.make_handles(c.agent, "WRITE", reqs)
            try:
                before = c.rpc_counts()
                self.timed_drive(row, c, "WRITE", reqs, handles)
                if before is not None:
                    after = c.rpc_counts()
                    row.rpcs.append(after["update"] - before["update"])
            finally:
                h.release_handles(c.agent, handles)
        self.log(
            f"{c.name:<18} {w.name:<8} write {row.gbps:7.2f} GB/s (new keys, {len(row.times)} reps"
            + (f", {row.rpcs[-1]} RPCs)" if row.rpcs else ")")
        )
        return row, devs

    def timed_drive(self, row: Row, c: NixlContender, op: str, reqs: list, handles: list | None) -> None:
        """One timed repetition: its seconds, CPU, run-queue wait and latencies go into `row`."""
        q0, c0 = runq_now(), cpu_now()
        dt, lat = self.harness.drive(c.agent, op, reqs, handles)
        row.cpu.append(cpu_now() - c0)
        row.runq.append(runq_since(q0))
        row.times.append(dt)
        row.lat += lat

    def time_xfer(self, c: NixlContender, w: Workload, op: str, reqs: list, handles: list | None) -> Row:
        row = Row(c.name, w.name, op, w.nbytes, w.descs)
        while not self.reps_done(row.times):
            if op == "read":
                self.bufs.poison(w)
            before = c.rpc_counts()
            self.timed_drive(row, c, "READ" if op == "read" else "WRITE", reqs, handles)
            if before is not None:
                after = c.rpc_counts()
                rpc, moved = ("update", "bytes_written") if op == "overwrite" else ("fetch", "bytes_read")
                row.rpcs.append(after[rpc] - before[rpc])
                want = c.moved_bytes(w, op == "read")
                if after[moved] - before[moved] != want:
                    row.verified = False
                    self.failures.append(
                        f"{c.name} {w.name} {op}: daos-sim moved {after[moved] - before[moved]} bytes, "
                        f"expected {want} ({w.nbytes} of data, its checksums"
                        + (" and records)" if op == "read" else ")")
                    )
            if op == "read":
                self.check_read(c, w, row)
        rpcs = f", {row.rpcs[-1]} RPCs" if row.rpcs else ""
        self.log(f"{c.name:<18} {w.name:<8} {op:<9} {row.gbps:7.2f} GB/s ({len(row.times)} reps{rpcs})")
        return row

    def run_query(self, c: NixlContender, keys: int, thread_counts: list[int]) -> None:
        """queryMem of `keys` names, every other one present, from each thread count."""
        present = list(range(0, keys, 2))
        if c.kind == "daos":
            names = [f"q-{i}" for i in range(keys)]
            objs = c.agent.register_memory(
                [(0, 64, (1 << 50) + i, names[i]) for i in present], "OBJ", backends=[c.backend]
            )
            src = self.bufs.src.ctypes.data
            local = c.agent.get_xfer_descs([(src + 64 * j, 64, 0) for j in range(len(present))], "DRAM")
            remote = c.agent.get_xfer_descs([(0, 64, (1 << 50) + i) for i in present], "OBJ")
            self.harness.drive(c.agent, "WRITE", [(local, remote)])
            c.agent.deregister_memory(objs, backends=[c.backend])
        else:
            c.root.mkdir(parents=True, exist_ok=True)
            names = [str(c.root / f"q-{i}") for i in range(keys)]
            for i in present:
                Path(names[i]).write_bytes(b"x" * 64)
        want = [i % 2 == 0 for i in range(keys)]
        batch = self.a.query_batch
        try:
            for threads in thread_counts:
                row = Row(c.name, "query", f"query x{threads}", 0, keys)
                while not self.reps_done(row.times):
                    before = c.rpc_counts()
                    got = [None] * keys
                    lat: list[float] = []
                    errors: list[BaseException] = []
                    start = threading.Barrier(threads + 1)

                    # The loop's values bound now: these threads are joined within the iteration anyway.
                    def worker(t: int, start=start, lat=lat, got=got, errors=errors, threads=threads) -> None:
                        mine = list(range(t * batch, keys, threads * batch))
                        start.wait()
                        try:
                            for a in mine:
                                idx = range(a, min(a + batch, keys))
                                ts = time.perf_counter()
                                res = c.agent.query_memory(
                                    [(0, 0, 0, names[i]) for i in idx], c.backend, mem_type=c.mem
                                )
                                lat.append(time.perf_counter() - ts)
                                for i, r in zip(idx, res):
                                    got[i] = r is not None
                        except BaseException as e:  # reported below
                            errors.append(e)

                    ths = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
                    for th in ths:
                        th.start()
                    c0 = cpu_now()
                    start.wait()
                    t0 = time.perf_counter()
                    for th in ths:
                        th.join()
                    row.times.append(time.perf_counter() - t0)
                    row.cpu.append(cpu_now() - c0)
                    row.lat += lat
                    if before is not None:
                        row.rpcs.append(c.rpc_counts()["query"] - before["query"])
                    if errors:
                        raise errors[0]
                    if got != want:
                        row.verified = False
                        wrong = sum(g != x for g, x in zip(got, want))
                        self.failures.append(f"{c.name} queryMem x{threads}: {wrong} of {keys} answers wrong")
                        raise RuntimeError(self.failures[-1])
                self.rows.append(row)
                self.log(f"{c.name:<18} query    x{threads:<3}  {row.dps:9.0f} keys/s ({len(row.times)} reps)")
        finally:
            if c.kind == "daos":
                self.sim.control("reset_data")
            else:
                for n in names:
                    Path(n).unlink(missing_ok=True)

    def run_contender(self, c: Contender, workloads: list[Workload], query: bool) -> None:
        print(f"- {c.name}", flush=True)
        self.current_kind = c.kind
        try:
            c.open(self.bufs)
        except Exception as e:
            note = f"unavailable: {type(e).__name__}: {e}"
            self.log(note)
            self.rows.append(Row(c.name, "-", "-", 0, 0, note=note))
            self.unavailable.add(c.name)
            if c.kind == "daos":  # the plugin is what this measures: it must run (POSIX may be missing)
                self.failures.append(f"{c.name}: could not run: {type(e).__name__}: {e}")
            return
        try:
            for w in workloads:
                if isinstance(c, MemcpyContender):
                    self.run_memcpy(c, w)
                    continue
                try:
                    self.run_xfer(c, w)
                except Exception as e:
                    # A POSIX contender that cannot run at all (e.g. io_uring refused by this
                    # kernel/sandbox), or a peer's backend raising at any point (another DAOS
                    # plugin: kv_contenders.PeerPlugin): report it and go on without it; ours must run. Wrong bytes
                    # are in self.failures already (check_read) and still fail the run, whoever
                    # returned them. A crash inside a peer's C++ (it runs in this process)
                    # cannot be caught here and ends the run.
                    if (c.kind == "posix" and not self.rows_of(c.name)) or c.kind == "peer":
                        wrong = any(f.startswith(f"{c.name} ") for f in self.failures)
                        note = f"{'wrong data' if wrong else 'unavailable'}: {type(e).__name__}: {e}"
                        self.log(note)
                        self.rows.append(Row(c.name, w.name, "-", 0, 0, note=note))
                        self.unavailable.add(c.name)
                        return
                    raise
            if query and not isinstance(c, MemcpyContender) and c.net is None:
                self.run_query(c, self.a.query_keys, self.a.query_threads)
        finally:
            c.close()

    def rows_of(self, name: str) -> list[Row]:
        return [r for r in self.rows if r.contender == name and r.times]


def real_warmup(bench: Bench, gib: float, workloads: list[Workload]) -> None:
    """Untimed new-key writes of `gib` GiB on a scratch container, destroyed after: the first
    I/O of a fresh engine and client (connections, the engine's first allocations) is paid
    before any contender. It does not make the contenders' order fair: whatever runs right
    after a container's destroy shares the engine with the reclaim of its space (see
    bench/real_pool.py), which the balanced passes of a real run even out (kv_harness.merge_passes)."""
    block = max(w.nbytes for w in workloads)
    block = min(block, bench.bufs.src.nbytes)
    reps = max(1, round(gib * 2**30 / block))
    w = Workload("warmup", 1, 1, block)
    c = RealDaosContender("warm-up", {})
    bench.current_kind = c.kind
    c.open(bench.bufs)
    t0 = time.perf_counter()
    devs = c.make_storage(w)
    try:
        for i in range(reps):
            if i:
                devs = c.renew_storage(w)
            bench.harness.drive(c.agent, "WRITE", c.requests(w, bench.bufs.src, devs))
    finally:
        c.drop_storage()
    print(
        f"- warm-up: {reps * block / 2**30:.1f} GiB of untimed new-key writes in {time.perf_counter() - t0:.1f} s "
        f"(the engine's first I/O paid before any contender)",
        flush=True,
    )
