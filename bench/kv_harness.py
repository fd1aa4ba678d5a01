# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""How bench/kv_bench.py times a transfer: the NIXL harness (one request per key, a window in
flight, check_xfer_state polling, as KVBM and LMCache drive NIXL) and the Row of results."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.kv_workloads import GB


@dataclass
class Row:
    contender: str
    workload: str
    op: str
    nbytes: int  # per repetition
    descs: int  # NIXL descriptors (or keys queried) per repetition
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    lat: list[float] = field(default_factory=list)  # per request/call, seconds
    rpcs: list[int] = field(default_factory=list)  # per repetition, from daos-sim's counters
    runq: list[float] = field(default_factory=list)  # per repetition: seconds threads waited for a CPU
    verified: bool = True
    note: str = ""
    best: bool = False  # t is the fastest rep, not the median (real engine: see merge_passes)
    pass_no: int = 0  # the pass over the contenders this row's reps ran in (real engine)
    # GB/s of each pass's fastest rep, by pass (merge_passes): the passes of a real run
    # interleave the contenders, so pass k of two contenders met about the same engine.
    passes: dict[int, float] = field(default_factory=dict)

    @property
    def t(self) -> float:
        return min(self.times) if self.best else statistics.median(self.times)

    @property
    def gbps(self) -> float:
        return self.nbytes / self.t / GB if self.nbytes else 0.0

    @property
    def gbps_range(self) -> tuple[float, float] | None:
        """GB/s of the slowest and of the fastest rep."""
        if not (self.times and self.nbytes):
            return None
        return self.nbytes / max(self.times) / GB, self.nbytes / min(self.times) / GB

    @property
    def dps(self) -> float:
        return self.descs / self.t

    @property
    def cpu_per_gb(self) -> float:
        moved = self.nbytes * len(self.times)
        return sum(self.cpu) / (moved / GB) if moved else float("nan")

    @property
    def waiting(self) -> float | None:
        """Cores' worth of this process's threads that were ready to run but waited for a CPU
        (run-queue wait over wall time): other processes on the machine, or more runnable
        threads than cores. Where it is high, the clock measured the share of CPU this run got."""
        return sum(self.runq) / sum(self.times[-len(self.runq) :]) if self.runq else None

    def pct(self, q: float) -> float | None:
        if not self.lat:
            return None
        return float(np.percentile(np.asarray(self.lat), q))


def runq_now() -> dict[int, int]:
    """Nanoseconds each thread of this process has waited on a run queue (schedstat's second
    field), by thread id; empty where the kernel has no schedstat."""
    out = {}
    for p in Path("/proc/self/task").glob("*"):
        try:
            out[int(p.name)] = int((p / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that just ended
    return out


def runq_since(before: dict[int, int]) -> float:
    """Seconds of run-queue wait since `before` over the threads alive now (a thread that ended
    meanwhile loses its share, one that started counts in full)."""
    return sum(v - before.get(t, 0) for t, v in runq_now().items()) / 1e9


def cpu_now() -> float:
    """User + system CPU seconds of this process, all its threads. process_time reads
    CLOCK_PROCESS_CPUTIME_ID (ns), not os.times' 10 ms ticks, which read 0 for a short op."""
    return time.process_time()


class Harness:
    """Posts one request per key and keeps `window` of them in flight; sweeps check_xfer_state
    over them, refilling the window, and sleeps `poll` before a sweep whenever the previous one
    completed nothing (a consumer's progress loop: it never spins while the I/O is under way).

    Two ways to get a request's handle:
      prepared      (default) the caller made the handles once, before the clock (make_handles),
                    and each repetition reposts them with transfer(h), as NIXL's nixlbench does and
                    as LMCache reuses its prepped descriptor lists; release_handles frees them
      per-transfer  initialize_xfer before, and release_xfer_handle after, every request, inside
                    the timed region, as a consumer that builds its requests on the fly does
    Returns the wall time and the per-request latencies (post to seen done)."""

    MODES = ("prepared", "per-transfer")

    def __init__(self, window: int, poll_s: float, timeout_s: float, mode: str = "prepared"):
        if mode not in self.MODES:
            raise ValueError(f"handle mode {mode!r}: one of {self.MODES}")
        self.window, self.poll, self.timeout, self.mode = window, poll_s, timeout_s, mode

    @property
    def prepared(self) -> bool:
        return self.mode == "prepared"

    def make_handles(self, agent, op: str, requests: list) -> list | None:
        """The handles of `requests` (prepared mode; None otherwise), made outside the clock."""
        if not self.prepared:
            return None
        return [agent.initialize_xfer(op, local, remote, agent.name) for local, remote in requests]

    @staticmethod
    def release_handles(agent, handles: list | None) -> None:
        for h in handles or ():
            agent.release_xfer_handle(h)

    def drive(self, agent, op: str, requests: list, handles: list | None = None) -> tuple[float, list[float]]:
        """One pass over `requests`: reposts `handles` when given (prepared), else makes and
        releases one handle per request inside the timed loop (per-transfer)."""
        lat: list[float] = []
        inflight: list = []
        own = handles is None

        def settle(h, ts: float, st: str, pending: list, call: str) -> None:
            if st == "PROC":
                pending.append((h, ts))
                return
            if own:
                agent.release_xfer_handle(h)
            if st != "DONE":  # negative statuses raise typed exceptions; "ERR" is the rest
                raise RuntimeError(f"{call}() returned {st}")
            lat.append(time.perf_counter() - ts)

        nxt, n = 0, len(requests)
        progressed = True  # the first sweep follows the first posts without a sleep
        t0 = time.perf_counter()
        deadline = t0 + self.timeout
        while nxt < n or inflight:
            while nxt < n and len(inflight) < self.window:
                ts = time.perf_counter()
                if own:
                    local, remote = requests[nxt]
                    h = agent.initialize_xfer(op, local, remote, agent.name)
                else:
                    h = handles[nxt]
                nxt += 1
                settle(h, ts, agent.transfer(h), inflight, "transfer")
            if not inflight:
                continue
            if not progressed:
                time.sleep(self.poll)
            still: list = []
            for h, ts in inflight:
                settle(h, ts, agent.check_xfer_state(h), still, "check_xfer_state")
            progressed = len(still) < len(inflight)
            inflight = still
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{op}: {len(inflight)} requests not done after {self.timeout:.0f} s")
        return time.perf_counter() - t0, lat


def merge_passes(rows: list[Row]) -> list[Row]:
    """One row per (contender, workload, op) from several passes over the contenders (`rows` in
    the order they ran): every rep of every pass, timed by the fastest (`best`), and each pass's
    fastest in `passes`. A real engine runs the contenders of each workload in several passes,
    in a balanced order (kv_passes.order), because whatever runs first after a container's
    destroy shares the engine with DAOS's background reclaim of that container's space (the
    first contender after the warm-up wrote new keys at 0.4-0.6x of the same RPCs a minute
    later), and noise on a shared machine only ever slows a rep down. Only the GB/s is the
    fastest rep's: the CPU, run-queue and latency columns pool every rep of every pass."""
    merged: dict[tuple[str, str, str], Row] = {}
    for r in rows:
        k = (r.contender, r.workload, r.op)
        m = merged.get(k)
        if m is None:
            merged[k] = Row(
                **{
                    **r.__dict__,
                    "times": list(r.times),
                    "cpu": list(r.cpu),
                    "lat": list(r.lat),
                    "rpcs": list(r.rpcs),
                    "runq": list(r.runq),
                    "best": True,
                    "passes": {r.pass_no: r.gbps_range[1]} if r.gbps_range else {},
                }
            )
            continue
        if r.gbps_range:
            m.passes[r.pass_no] = max(m.passes.get(r.pass_no, 0.0), r.gbps_range[1])
        for f in ("times", "cpu", "lat", "rpcs", "runq"):
            getattr(m, f).extend(getattr(r, f))
        m.verified = m.verified and r.verified
        m.note = m.note or r.note
    return list(merged.values())
