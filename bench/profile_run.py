# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Profiles one contender on one workload through kv_bench's harness: set-up and the untimed
first write run unprofiled, then `perf record` (cpu-clock, call graphs) attaches to this process
for the timed repetitions of one op only, and the top symbols per thread are printed.

    .venv/bin/python -m bench.profile_run --contender daos-default --workload small --op read \
        [--scale 1] [--reps 20] [--handles prepared|per-transfer] [--sim-copy on|off] [--perf-data /tmp/kv.perf]

(from the repository root; the result line is followed by the machine's load, bench/machine_load.py)

--system samples every CPU instead (`perf record -a`): the DAOS engine's threads, the kernel's
network copies and other processes show up beside this one's, which is where the time goes when
client and engine share the cores.

A "+net" contender (daos-default-net) gets kv_bench's modeled network (same defaults and
--net-* options) for the profiled reps only.

Needs `perf` (linux-perf); in a VM without hardware counters cpu-clock sampling still works.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

if "--real" in sys.argv[1:] and __name__ == "__main__":
    from bench.testbed import use_real_pool

    use_real_pool()

from bench import kv_bench  # noqa: E402
from bench.kv_bench import daoskit  # noqa: E402
from bench.machine_load import LoadWatch, describe  # noqa: E402


def main() -> int:
    # No abbreviations: --real is looked for in sys.argv before the import (above).
    ap = argparse.ArgumentParser(
        prog="python -m bench.profile_run", description=__doc__.splitlines()[0], allow_abbrev=False
    )
    ap.add_argument("--contender", default="daos-default")
    ap.add_argument(
        "--real",
        action="store_true",
        help="a real-* contender on the real pool in DAOS_POOL (through NIXL_DAOS_LIBDAOS), as kv_bench --real",
    )
    ap.add_argument("--workload", default="small", choices=["ref", "small", "lmcache"])
    ap.add_argument("--op", default="read", choices=["read", "write"])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--poll-ms", type=float, default=1.0)
    ap.add_argument("--num-queues", type=int, default=0)
    ap.add_argument("--handles", choices=kv_bench.Harness.MODES, default="prepared")
    ap.add_argument("--net-gbps", default=None)
    ap.add_argument("--net-rpc-cost-us", default=None)
    ap.add_argument(
        "--sim-copy",
        choices=["on", "off"],
        default="on",
        help="off: daos-sim's `copy off` for the profiled reps (no data byte moves; reads not verified)",
    )
    ap.add_argument(
        "--system",
        action="store_true",
        help="sample every CPU (perf record -a), the DAOS engine and the kernel's work included, not only this process",
    )
    ap.add_argument("--freq", type=int, default=1999, help="samples per second per CPU")
    ap.add_argument("--perf-data", type=Path, default=Path("/tmp/kv_profile.perf"))
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    if a.real and a.sim_copy == "off":
        ap.error("--sim-copy off is daos-sim's control: there is no copy to turn off on a real pool")

    net_args = [
        x for k, v in (("--net-gbps", a.net_gbps), ("--net-rpc-cost-us", a.net_rpc_cost_us)) if v for x in (k, v)
    ]
    args = kv_bench.parse_args(
        [
            "--contenders",
            a.contender,
            "--window",
            str(a.window),
            "--poll-ms",
            str(a.poll_ms),
            "--num-queues",
            str(a.num_queues),
            "--handles",
            a.handles,
        ]
        + net_args
        + (["--real"] if a.real else [])
    )
    w = kv_bench.make_workloads(a.scale, [a.workload])[0]
    load = LoadWatch()
    daoskit.prepare_environment(with_posix=True)
    sim = None if a.real else daoskit.Sim()
    if sim:
        kv_bench.calm(sim)
    shm = args.shm / f"nixl-daos-profile-{os.getpid()}"
    bufs = kv_bench.Buffers(w.nbytes, args.cores)
    net = kv_bench.choose_net(args) if a.contender.endswith("-net") else None
    if net:
        print(f"modeled network: {', '.join(net.controls())}: {net.why}")
    c = kv_bench.build_contenders(args, sim, shm, args.cores, net)[0]  # "posix" names a group: its first
    harness = kv_bench.Harness(a.window, a.poll_ms / 1000, 600, a.handles)
    c.open(bufs)
    devs = c.make_storage(w)
    handles = None
    try:
        reqs = {"write": c.requests(w, bufs.src, devs), "read": c.requests(w, bufs.dst, devs)}
        harness.drive(c.agent, "WRITE", reqs["write"])
        handles = harness.make_handles(c.agent, a.op.upper(), reqs[a.op])
        c.net_on()
        if sim:
            sim.control(f"copy {a.sim_copy}")
        perf = subprocess.Popen(
            [
                "perf",
                "record",
                "-q",
                "-F",
                str(a.freq),
                "-e",
                "cpu-clock",
                "-g",
            ]
            + (["-a"] if a.system else ["-p", str(os.getpid())])
            + [
                "-o",
                str(a.perf_data),
            ]
        )
        time.sleep(1.0)  # perf attaches
        c0, t0 = kv_bench.cpu_now(), time.perf_counter()
        for _ in range(a.reps):
            harness.drive(c.agent, a.op.upper(), reqs[a.op], handles)
        dt, cpu = time.perf_counter() - t0, kv_bench.cpu_now() - c0
        c.net_off()
        if sim:
            sim.control("copy on")
        perf.send_signal(signal.SIGINT)
        perf.wait()
        if a.op == "read" and a.sim_copy == "on" and bufs.first_mismatch(w.nbytes) is not None:
            print("read-back differs from the source", file=sys.stderr)
            return 1
    finally:
        harness.release_handles(c.agent, handles)
        c.drop_storage()
        c.close()
        if shm.exists():
            shm.rmdir()
    moved = w.nbytes * a.reps
    print(
        f"{c.name} {w.describe()} {a.op} x{a.reps}, handles {a.handles}: {moved / dt / 1e9:.2f} GB/s, "
        f"{cpu / dt:.2f} cores busy, {cpu / (moved / 1e9):.3f} CPU s/GB"
        + (" (daos-sim copy off: no byte moved, reads not verified)" if a.sim_copy == "off" else "")
    )
    print(describe(load.stop()))
    for sort in ("comm", "comm,dso,sym"):
        print(f"\n-- perf report --sort {sort} (self time, % of all samples)")
        out = subprocess.run(
            [
                "perf",
                "report",
                "-i",
                str(a.perf_data),
                "--no-children",
                "--sort",
                sort,
                "-g",
                "none",
                "--percent-limit",
                "0.4",
                "--stdio",
            ],
            capture_output=True,
            text=True,
        ).stdout
        lines = [x for x in out.splitlines() if x.strip() and not x.startswith("#")]
        print("\n".join(lines[: a.top]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
