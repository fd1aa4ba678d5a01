# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""CPU cost per NIXL request and per descriptor: the DAOS plugin on daos-sim (its defaults: one
RPC per dkey) against NIXL POSIX on /dev/shm, through kv_bench's harness and contenders, and where
the DAOS contenders' CPU goes (the plugin, daos-sim's copies, the rest of daos-sim, NIXL agent +
Python, the kernel).

    .venv/bin/python -m bench.cpu_cost [--workloads small,ref] [--ref-scale 0.25] [--reps 8]
                                       [--no-perf] [--contenders daos-default,posix]

(from the repository root; the table's header gives the machine's load, bench/machine_load.py)

CPU is the process's user+sys time of all its threads (time.process_time) over one repetition (every key
once, one NIXL request per key, prepared handles), divided by the requests (keys) and by the
descriptors (keys x layers) of the repetition. Ops: overwrite (the same keys again, after an
untimed first write) and read. "busy" is that CPU over the wall time (cores kept busy), "runq"
the time its threads were ready to run but waited for a CPU (schedstat), over the wall time:
where busy + runq exceeds the cores, the machine (other processes, or more runnable threads
than cores) set the wall time, and only the CPU figures compare across contenders.

"daos-sim with its copy taken out": each DAOS cell runs twice, interleaved rep by rep (ABBA, so
drift of this shared machine hits both alike): "copy" as usual, and "nocopy" under daos-sim's
`copy off` control (update and fetch do all their work, extents, iovs and counters included, but
move no data byte). copy - nocopy is the copy model's CPU; nocopy is everything else. That
holds where the copy does not change how the threads run: where an RPC without its copy
completes at once (many small RPCs), the lanes park and are woken per RPC, and nocopy can cost
more than copy (a negative copy figure): there, read the perf split of the copy cell instead.
Reads with
copies on are verified in full (poisoned destination); reads with copies off are NOT verified
(the buffer is left as it was by design); their RPC and byte counters are still checked.

With perf (default when `perf` runs here) each cell is then sampled on its own (cpu-clock, no
call graphs) and the samples are split by thread, DSO and symbol:
  plugin   libplugin_DAOS.so (our Rust and the C++ shim; for POSIX, libplugin_POSIX.so)
  copy     data copies: daos-sim's (its streaming copy, and libc memcpy/memmove in the plugin's
           lane threads: daos-sim copies there, inside daos_eq_poll; the plugin moves no data),
           and for POSIX the kernel's copies to and from tmpfs (_copy_to_iter and the like)
  sim      the rest of libdaos_sim.so (validation, lookups, extent walk, events)
  nixl+py  libnixl*, the NIXL Python bindings, CPython, numpy
  kernel   the rest of [kernel.kallsyms] (syscalls, page-cache lookups, wake-ups, scheduling)
  libc     the rest of libc/libstdc++/libgcc/ld.so (malloc, locks, ...: shared by all callers)
The plugin's own CPU per request and per descriptor is then nocopy CPU x the plugin's share
(POSIX: its CPU x libplugin_POSIX.so's share). In a VM cpu-clock samples skid within the kernel
(after a copy, some land on e.g. folio_unlock), so POSIX's copy share is a lower bound.

Reference rows: numpy's memcpy of the workload's bytes, one thread and one per core (kv_bench's
memcpy contenders), and "scatter 1T": one thread copying the workload in its pieces between a
key-major buffer (as daos-sim's store keeps a key) and the layer-major DRAM layout, the copy
model's access pattern with no daos-sim, plugin or NIXL around it.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench import kv_bench
from bench.kv_bench import Buffers, Harness, Workload, build_contenders, calm, cpu_now, daoskit, make_workloads
from bench.kv_contenders import MemcpyContender, NixlContender
from bench.kv_harness import runq_now, runq_since
from bench.machine_load import RULE, LoadWatch, describe, verdict

CATS = ("plugin", "copy", "sim", "nixl+py", "kernel", "libc", "other")


@dataclass
class Cell:
    contender: str
    workload: Workload
    op: str
    mode: str  # "copy", "nocopy" (daos-sim copy off) or "-" (not daos-sim)
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    runq: list[float] = field(default_factory=list)  # seconds this process's threads waited for a CPU
    split: dict[str, float] | None = None  # perf shares, summing to 1
    samples: int = 0

    @property
    def cpu_rep(self) -> float:
        return statistics.median(self.cpu)

    @property
    def per_req_us(self) -> float:
        return self.cpu_rep / self.workload.keys * 1e6

    @property
    def per_desc_us(self) -> float:
        return self.cpu_rep / self.workload.descs * 1e6

    @property
    def busy(self) -> float:
        """Cores this process kept busy (CPU / wall)."""
        return sum(self.cpu) / sum(self.wall)

    @property
    def waiting(self) -> float:
        """Cores' worth of its threads ready to run but waiting for a CPU (run-queue delay / wall):
        this process's own threads outnumbering the cores, or other processes on the machine."""
        return sum(self.runq) / sum(self.wall)

    @property
    def gbps(self) -> float:
        return self.workload.nbytes / statistics.median(self.wall) / 1e9


# The kernel's data copies (tmpfs reads and writes); not _copy_from_user and the like, which
# move syscall arguments.
KERNEL_COPY = re.compile(r"_copy_(to|from)_iter|copy_(page|folio)_(to|from)_iter|rep_movs|copy_user_|memcpy|memmove")


def classify(comm: str, dso: str, sym: str) -> str:
    lane = comm.startswith("nixl-daos-lane")
    if "libplugin_" in dso:
        return "plugin"
    if "libdaos_sim" in dso:
        return "copy" if re.search(r"stream_|copy_raw|copy::", sym) else "sim"
    if "kernel" in dso or sym.startswith("[k]"):
        return "copy" if KERNEL_COPY.search(sym) else "kernel"
    if re.search(r"libc\.so|libstdc\+\+|libgcc|ld-linux|libm\.so", dso):
        return "copy" if lane and re.search(r"memmove|memcpy", sym) else "libc"
    if re.search(r"nixl|python|_bindings|numpy|libserdes|\.cpython-", dso):
        return "nixl+py"
    return "other"


class Perf:
    """`perf record` of this process (cpu-clock, no call graphs) while a callable runs."""

    def __init__(self, freq: int):
        self.freq = freq
        self.dir = Path(tempfile.mkdtemp(prefix="cpu-cost-perf-"))

    @staticmethod
    def available() -> bool:
        if not shutil.which("perf"):
            return False
        r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "true"], capture_output=True)
        return r.returncode == 0

    def split(self, run) -> tuple[dict[str, float], int]:
        data = self.dir / "cell.perf"
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-F", str(self.freq), "-e", "cpu-clock", "-p", str(os.getpid()), "-o", str(data)]
        )
        time.sleep(1.0)  # perf attaches
        try:
            run()
        finally:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        out = subprocess.run(
            ["perf", "report", "-i", str(data), "--no-children", "--sort", "comm,dso,sym", "-g", "none"]
            + ["--percent-limit", "0", "--stdio", "-t", "\t"],
            capture_output=True,
            text=True,
        ).stdout
        shares = dict.fromkeys(CATS, 0.0)
        samples = 0
        for line in out.splitlines():
            m = re.match(r"#\s*Samples:\s*([\d.]+)([KM]?)", line)  # perf writes "3K"
            if m:
                samples = round(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6}[m.group(2)])
            if line.startswith("#") or "\t" not in line:
                continue
            pct, comm, dso, sym = (x.strip() for x in (line.split("\t") + ["", "", ""])[:4])
            shares[classify(comm, dso, sym)] += float(pct.rstrip("%")) / 100
        total = sum(shares.values()) or 1.0
        data.unlink(missing_ok=True)
        return {k: v / total for k, v in shares.items()}, samples


class Runner:
    def __init__(self, a, sim: daoskit.Sim, bufs: Buffers, perf: Perf | None):
        self.a, self.sim, self.bufs, self.perf = a, sim, bufs, perf
        self.harness = Harness(a.window, a.poll_ms / 1000.0, 600.0, "prepared")
        self.cells: list[Cell] = []

    def one_rep(self, c: NixlContender, w: Workload, op: str, reqs, handles, mode: str, cell: Cell | None) -> None:
        """One timed repetition of `op` in daos-sim copy `mode` (which the caller set); records
        into `cell` when given, verifies its reads with copies on, checks daos-sim's counters.
        Without a cell (perf's samples) nothing is verified: numpy's poison and compare would
        count as NIXL + Python; the same reads were verified in the timed reps."""
        verify = op == "read" and mode != "nocopy" and cell is not None
        if verify:
            self.bufs.poison(w)
        before = c.rpc_counts()
        q0, c0, t0 = runq_now(), cpu_now(), time.perf_counter()
        self.harness.drive(c.agent, "READ" if op == "read" else "WRITE", reqs, handles)
        dt, cpu, q = time.perf_counter() - t0, cpu_now() - c0, runq_since(q0)
        if cell is not None:
            cell.cpu.append(cpu)
            cell.wall.append(dt)
            cell.runq.append(q)
        if before is not None:
            after = c.rpc_counts()
            moved = "bytes_read" if op == "read" else "bytes_written"
            want = c.moved_bytes(w, op == "read")
            if after[moved] - before[moved] != want:
                raise RuntimeError(
                    f"{c.name} {w.name} {op}: daos-sim moved {after[moved] - before[moved]} bytes, expected {want}"
                )
        if verify:
            bad = self.bufs.first_mismatch(w.nbytes)
            if bad is not None:
                raise RuntimeError(f"{c.name} {w.name} {op}: read-back differs from the source at byte {bad}")

    def untimed(self, c: NixlContender, w: Workload, op: str, reqs, handles, mode: str, n: int) -> None:
        for _ in range(n):
            self.one_rep(c, w, op, reqs, handles, mode, None)

    def set_copy(self, mode: str) -> None:
        if mode != "-":
            self.sim.control("copy off" if mode == "nocopy" else "copy on")

    def run(self, c: NixlContender, w: Workload) -> None:
        devs = c.make_storage(w)
        modes = ["copy", "nocopy"] if c.kind == "daos" else ["-"]
        try:
            reqs = {"overwrite": c.requests(w, self.bufs.src, devs), "read": c.requests(w, self.bufs.dst, devs)}
            self.set_copy("copy" if c.kind == "daos" else "-")
            self.harness.drive(c.agent, "WRITE", reqs["overwrite"])  # the untimed first write
            for op in ("overwrite", "read"):
                handles = self.harness.make_handles(c.agent, "READ" if op == "read" else "WRITE", reqs[op])
                try:
                    cells = [Cell(c.name, w, op, m) for m in modes]
                    self.one_rep(c, w, op, reqs[op], handles, modes[0], None)  # warm
                    r = 0
                    while (r < self.a.reps or sum(cells[0].wall) < self.a.min_time) and r < 200:
                        for cell in cells if r % 2 == 0 else cells[::-1]:  # ABBA
                            self.set_copy(cell.mode)
                            self.one_rep(c, w, op, reqs[op], handles, cell.mode, cell)
                        r += 1
                    for cell in cells:
                        if self.perf:
                            self.set_copy(cell.mode)
                            n = max(1, round(self.a.perf_seconds / statistics.median(cell.wall)))
                            cell.split, cell.samples = self.perf.split(
                                functools.partial(self.untimed, c, w, op, reqs[op], handles, cell.mode, n)
                            )
                        self.cells.append(cell)
                        print(
                            f"  {c.name:<12} {w.name:<6} {op:<9} {cell.mode:<6} {cell.gbps:6.2f} GB/s, "
                            f"{cell.per_req_us:8.1f} us CPU/request, {cell.per_desc_us:6.2f} us CPU/desc",
                            flush=True,
                        )
                finally:
                    self.set_copy("copy" if c.kind == "daos" else "-")
                    self.harness.release_handles(c.agent, handles)
        finally:
            c.drop_storage()


def reference_rows(a, bufs: Buffers, workloads: list[Workload]) -> list[tuple]:
    """(name, workload, GB/s, CPU s per rep, cores busy, cores waiting) of the copy references,
    medians of a.reps."""
    out = []

    def timed(name: str, w: Workload, copy) -> None:
        cpu, wall, runq = [], [], []
        for _ in range(a.reps):
            q0, c0, t0 = runq_now(), cpu_now(), time.perf_counter()
            copy()
            wall.append(time.perf_counter() - t0)
            cpu.append(cpu_now() - c0)
            runq.append(runq_since(q0))
        t = statistics.median(wall)
        out.append((name, w, w.nbytes / t / 1e9, statistics.median(cpu), sum(cpu) / sum(wall), sum(runq) / sum(wall)))

    for w in workloads:
        for m in (MemcpyContender("memcpy 1T", 1), MemcpyContender(f"memcpy {a.cores}T", a.cores)):
            timed(m.name, w, functools.partial(m.copy, bufs, w.nbytes))
        # The copy model's pattern: a key's layers packed in the store, scattered in DRAM.
        store = bufs.src[: w.nbytes].reshape(w.keys, w.layers, w.block)
        dram = bufs.dst[: w.nbytes].reshape(w.layers, w.keys, w.block).transpose(1, 0, 2)
        timed("scatter 1T", w, functools.partial(np.copyto, dram, store))
    return out


def report(cells: list[Cell], refs, perf: bool, load: dict) -> None:
    print(f"\n{describe(load)}")
    print(
        "CPU per repetition (median), per NIXL request and per descriptor; perf split of each cell's CPU "
        "(% of its samples)"
    )
    head = (
        f"{'contender':<12} {'wl':<6} {'op':<9} {'daos-sim':<8} {'GB/s':>7} {'busy':>4} {'runq':>4} {'CPU s/GB':>8} "
        f"{'us/req':>8} {'us/desc':>7}" + ("".join(f" {c:>7}" for c in CATS[:-1]) + f" {'samples':>7}" if perf else "")
    )
    print(head)
    print("-" * len(head))
    for x in cells:
        line = (
            f"{x.contender:<12} {x.workload.name:<6} {x.op:<9} {x.mode:<8} {x.gbps:7.2f} "
            f"{x.busy:4.2f} {x.waiting:4.2f} {x.cpu_rep / (x.workload.nbytes / 1e9):8.3f} "
            f"{x.per_req_us:8.1f} {x.per_desc_us:7.2f}"
        )
        if x.split:
            line += "".join(f" {100 * x.split[c]:6.1f}%" for c in CATS[:-1]) + f" {x.samples:>7}"
        print(line + ("  (read not verified: copy off)" if x.op == "read" and x.mode == "nocopy" else ""))
    print(f"\n{'reference':<12} {'wl':<6} {'GB/s':>7} {'busy':>4} {'runq':>4} {'CPU s/GB':>8} {'us/desc':>7}")
    for name, w, gbps, cpu, busy, waiting in refs:
        print(
            f"{name:<12} {w.name:<6} {gbps:7.2f} {busy:4.2f} {waiting:4.2f} {cpu / (w.nbytes / 1e9):8.3f} "
            f"{cpu / w.descs * 1e6:7.2f}"
        )

    print(
        "\nPer request and per descriptor, data copies apart. DAOS: copy = copy - nocopy (same reps, "
        "interleaved), the rest and its split from the nocopy cell; POSIX: split by perf (copy = the kernel's "
        "copies to and from tmpfs). backend = plugin + daos-sim's bookkeeping + kernel (DAOS), plugin + kernel "
        "(POSIX): all but NIXL, Python and libc"
    )
    print(
        f"{'contender':<12} {'wl':<6} {'op':<9} {'CPU us/req':>10} {'copy us/desc':>12} {'rest us/req':>11} "
        f"{'backend us/req':>14} {'plugin us/req':>13} {'plugin us/desc':>14}"
    )
    by = {(x.contender, x.workload.name, x.op, x.mode): x for x in cells}
    nan = float("nan")
    for x in cells:
        if x.mode == "nocopy":
            continue
        if x.mode == "copy":
            y = by.get((x.contender, x.workload.name, x.op, "nocopy"))
            if y is None:
                continue
            copy = x.per_desc_us - y.per_desc_us
            rest = y.per_req_us
            sh = y.split
        else:
            sh = x.split
            copy = x.per_desc_us * sh["copy"] if sh else nan
            rest = x.per_req_us * (1 - sh["copy"]) if sh else nan
        backend = rest * (sh["plugin"] + sh["kernel"] + sh["sim"]) / max(1 - sh["copy"], 1e-9) if sh else nan
        plugin = rest * sh["plugin"] / max(1 - sh["copy"], 1e-9) if sh else nan
        print(
            f"{x.contender:<12} {x.workload.name:<6} {x.op:<9} {x.per_req_us:10.1f} {copy:12.2f} {rest:11.1f} "
            f"{backend:14.1f} {plugin:13.2f} {plugin / x.workload.layers:14.3f}"
        )
    for wname in ("small", "ref"):
        d = by.get(("daos default", wname, "read", "copy"))
        mem = [r for r in refs if r[0].startswith("memcpy") and r[0] != "memcpy 1T" and r[1].name == wname]
        if not (d and mem):
            continue
        _, w, mgbps, mcpu, mbusy, mwait = mem[0]
        y = by.get(("daos default", wname, "read", "nocopy"))
        # Wall-clock ratios on a shared machine compare how much CPU each run got; CPU per byte
        # does not: with every core busy for both, the ratio is memcpy's CPU per byte / DAOS's.
        print(
            f"\n{wname} read, daos default: {d.gbps:.2f} GB/s = {d.gbps / mgbps:.2f}x per-core memcpy "
            f"({mgbps:.2f} GB/s) by the clock, daos with {d.busy:.2f} cores busy and {d.waiting:.2f} waiting "
            f"for a CPU, memcpy with {mbusy:.2f} and {mwait:.2f}. By CPU per byte (both with every core busy): "
            f"{mcpu / d.cpu_rep:.2f}x"
            + (
                f"; daos-sim's copy alone (copy - nocopy) would allow {mcpu / (d.cpu_rep - y.cpu_rep):.2f}x, "
                f"everything but the copy (nocopy) {mcpu / y.cpu_rep:.2f}x"
                if y
                else ""
            )
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.cpu_cost",
        description=__doc__.splitlines()[0],
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--workloads", default="small,ref", help="comma list of small, ref")
    ap.add_argument("--ref-scale", type=float, default=0.25, help="keys of ref x this (0.25: 30 keys, 1.17 GiB)")
    ap.add_argument("--small-scale", type=float, default=1.0, help="keys of small x this")
    ap.add_argument("--contenders", default="daos-default,posix", help="kv_bench contender names")
    ap.add_argument("--reps", type=int, default=8, help="timed reps per cell and mode, at least; the median counts")
    ap.add_argument("--min-time", type=float, default=0.5, help="more reps until a cell's sum to this many seconds")
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--poll-ms", type=float, default=1.0)
    ap.add_argument("--no-perf", dest="perf", action="store_false", help="no perf split")
    ap.add_argument("--perf-seconds", type=float, default=1.5, help="wall seconds of each cell's perf sample")
    ap.add_argument("--freq", type=int, default=1999, help="perf samples per second per CPU")
    a = ap.parse_args(argv)
    ka = kv_bench.parse_args(["--contenders", a.contenders, "--no-memcpy-again", "--window", str(a.window)])
    a.cores = ka.cores
    names = [x.strip() for x in a.workloads.split(",") if x.strip()]
    workloads = [w for n in names for w in make_workloads(a.ref_scale if n == "ref" else a.small_scale, [n])]
    perf = None
    if a.perf:
        if Perf.available():
            perf = Perf(a.freq)
        else:
            print("perf is not usable here (not installed, or perf_event_paranoid): no split; --no-perf hides this")

    load = LoadWatch()
    daoskit.prepare_environment(with_posix=True)
    sim = daoskit.Sim()
    calm(sim)
    shm = ka.shm / f"nixl-daos-cpucost-{os.getpid()}"
    bufs = Buffers(max(w.nbytes for w in workloads), a.cores)
    print(
        f"CPU cost per request and per descriptor: {a.cores} cores, {a.reps} reps per cell (copy/nocopy "
        f"interleaved), window {a.window}, poll {a.poll_ms:g} ms, prepared handles"
        + (f", perf split over ~{a.perf_seconds:g} s per cell at {a.freq} Hz" if perf else "")
    )
    for w in workloads:
        print(f"  {w.describe()} ({w.keys} requests, {w.descs} descriptors per repetition)")
    run = Runner(a, sim, bufs, perf)
    try:
        for c in build_contenders(ka, sim, shm, a.cores):
            if not isinstance(c, NixlContender):
                continue
            c.open(bufs)
            try:
                for w in workloads:
                    run.run(c, w)
            finally:
                c.close()
    finally:
        calm(sim)
        if shm.exists():
            for p in shm.iterdir():
                p.unlink()
            shm.rmdir()
    refs = reference_rows(a, bufs, workloads)
    rec = load.stop()
    report(run.cells, refs, perf is not None, rec)
    print(f"\nthis run: {verdict(rec)}; {RULE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
