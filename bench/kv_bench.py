# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""KV-offload benchmark of the DAOS plugin through the real NIXL agent, on the embedded daos-sim,
against NIXL's own POSIX backend on tmpfs and a plain in-process memcpy (the physical limit).

Workloads (all sizes times --scale, except queryMem):
  ref      the reference KV workload: 120 keys x 40 layers x 1 MiB (4.69 GiB), one descriptor per
           layer, written then read back (the reference C++ plugin on a 400G testbed: 34.17 GB/s
           with one RPC per key, 14.40 with one per layer)
  small    256 keys x 64 layers x 4 KiB, written then read back
  lmcache  one descriptor per key, 8 MiB chunks, as many bytes as `ref`
  query    queryMem of 10,000 keys, half present, from 1 and from 16 threads

Contenders: the DAOS plugin with its defaults on daos-sim with no modeled cost (the plugin's and
the simulator's own overhead) and with a modeled network (+net; see NetModel in kv_net.py and
the comment above it: a link below this machine's copy rate and a serialised per-RPC cost), or
with --real on a real DAOS pool (real-default, and real-prev: the plugin built from an earlier
commit by bench/prev.sh; DAOS_POOL through NIXL_DAOS_LIBDAOS, a container per workload, each
workload in --passes passes over the contenders in a balanced order, the fastest rep counting,
so that ratios compare contenders that met the engine in the same state); POSIX
from the same wheel on /dev/shm, default and use_uring=true, one file per key; numpy copyto of
the same bytes with 1 thread and with one thread per core, first and again last (the faster
counts; a change of more than 15% is reported as NOISY).

Every transfer goes through the same harness: one NIXL request per key, a window of --window
requests in flight, check_xfer_state on each after a --poll-ms sleep, as KVBM and LMCache drive
NIXL. Three ops per workload: write (every rep to keys never written, storage allocated inside
the clock: the headline write, as KV offload writes each block once), overwrite (the last keys
again) and read. --handles prepared (default): each key's handle is made once before the clock and reposted
by every rep (as nixlbench); --handles per-transfer: initialize_xfer and release_xfer_handle
around every request, timed. Every read rep is verified against the source (poisoned
destination, full compare), so a fast wrong answer cannot win. Storage is freed between
contenders (sim reset_data, tmpfs files deleted); one DRAM source and one destination serve all.

    .venv/bin/python -m bench.kv_bench [--scale 1.0] [--workloads ref,small,lmcache,query]
                                       [--contenders daos,posix,memcpy | names ...] [--reps 3]
                                       [--handles prepared|per-transfer] [--net-gbps G --net-rpc-cost-us U]
                                       [--strict]
(from the repository root). Prints the machine's load (bench/machine_load.py: the 1/5/15-minute
load average and the CPU count at the start and at the end; the run is CONTENDED when the load
exceeded the CPU count), the table, ratios and a PASS/MISS line per target (a MISS while the
run's threads waited for a CPU, other processes sharing the machine, is marked CONTENDED with the
ratio of CPU per byte beside it; bench/cpu_cost.py splits that CPU); writes results/<timestamp>/
(results.json, results.csv, plot.png). Exit status: 0 when the run ran and every read-back was
verified (a MISSed target, a CONTENDED run, an optional contender that could not run here are
findings, printed); 1 a wrong read-back, a failed run, or a DAOS plugin contender that could not
run; with --strict, 2 when every read was verified but a target missed.

This file is the entry point (arguments, the run, the results); the parts live beside it in the
bench package: kv_workloads.py (workloads, buffers, verification), kv_net.py (the +net model),
kv_harness.py (the NIXL harness, result rows), kv_contenders.py, kv_runner.py (each contender over
each workload) and kv_report.py (tables, ratios, targets, plots). With --real, run it as the main
module: it sets the environment daoskit reads at import before importing it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

if "--real" in sys.argv[1:] and __name__ == "__main__":
    # Every contender, workload and pass gets a container of its own.
    from bench.testbed import use_real_pool

    use_real_pool()

from bench import kv_passes, kv_report, real_pool  # noqa: E402
from bench.kv_contenders import MemcpyContender, NixlContender, build_contenders, calm  # noqa: E402
from bench.kv_harness import Harness, cpu_now, merge_passes  # noqa: E402
from bench.kv_net import (  # noqa: E402
    NET_LINK_MAX_GBPS,
    NET_LINK_SHARE,
    NET_RPC_BYTES,
    TESTBED_GBPS,
    TESTBED_RPC_US,
    choose_net,
)
from bench.kv_runner import Bench, real_warmup  # noqa: E402
from bench.kv_workloads import Buffers, MiB, Workload, make_workloads  # noqa: E402
from bench.machine_load import LoadWatch, describe_start  # noqa: E402
from tests.e2e import daoskit  # noqa: E402

# What bench/cpu_cost.py and bench/profile_run.py use through kv_bench.
__all__ = [
    "Buffers",
    "Harness",
    "NixlContender",
    "Workload",
    "build_contenders",
    "calm",
    "choose_net",
    "cpu_now",
    "daoskit",
    "make_workloads",
    "parse_args",
]


def parse_args(argv=None):
    cores = len(os.sched_getaffinity(0))
    ap = argparse.ArgumentParser(
        prog="python -m bench.kv_bench",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument(
        "--scale", type=float, default=1.0, help="workload size factor (keys of ref and small, bytes of lmcache)"
    )
    ap.add_argument("--workloads", default="ref,small,lmcache,query", help="comma list of ref, small, lmcache, query")
    ap.add_argument(
        "--real",
        action="store_true",
        help="the DAOS contenders run on a real pool (DAOS_POOL, through the libdaos in NIXL_DAOS_LIBDAOS), "
        "a container of its own per contender, workload and pass (--passes); default contenders: real; no queryMem",
    )
    ap.add_argument(
        "--real-warmup-gib",
        type=float,
        default=2.0,
        help="--real: untimed new-key writes of this many GiB before the contenders (0: none)",
    )
    ap.add_argument(
        "--contenders",
        default=None,
        help="comma list of groups (daos, real, posix, memcpy) or names (daos-default, daos-default-net, "
        "real-default, real-prev, posix, "
        "posix-uring, posix-dfuse, posix-pil4dfs, real-cpp, real-dfs, memcpy-1t, memcpy-nt); default "
        "memcpy,daos,posix (--real: real, plus posix-dfuse when NIXL_DAOS_DFUSE_DIR is set); real-cpp is the "
        "reference C++ plugin at NIXL_DAOS_CPP_PLUGIN, real-dfs NIXL PR #2261's libdfs backend at "
        "NIXL_DAOS_DFS_PLUGIN, both built by bench/reference.sh",
    )
    ap.add_argument(
        "--reps",
        type=int,
        default=3,
        help="repetitions per op at least (per pass with --real); the median counts (with --real: the fastest)",
    )
    ap.add_argument(
        "--passes",
        type=int,
        default=4,
        help="--real: passes over the contenders per workload, in a balanced order (kv_passes.order); "
        "the fastest rep counts",
    )
    ap.add_argument("--min-time", type=float, default=0.5, help="repeat short ops until they sum to this many seconds")
    ap.add_argument(
        "--max-reps",
        type=int,
        default=100,
        help="at most this many repetitions per op (short ops: enough for a steady median on a noisy machine)",
    )
    ap.add_argument("--window", type=int, default=64, help="key-requests in flight")
    ap.add_argument("--poll-ms", type=float, default=1.0, help="sleep between sweeps of check_xfer_state")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds one op may take before the run fails")
    ap.add_argument("--num-queues", type=int, default=0, help="DAOS plugin num_queues (0: its default)")
    ap.add_argument("--query-keys", type=int, default=10_000)
    ap.add_argument("--query-threads", default="1,16", help="comma list of thread counts for queryMem")
    ap.add_argument("--query-batch", type=int, default=16, help="keys per query_memory call")
    ap.add_argument(
        "--max-op-time",
        type=float,
        default=6.0,
        help="stop repeating an op (after at least one rep) once its reps sum to this many seconds",
    )
    ap.add_argument(
        "--no-memcpy-again",
        dest="memcpy_again",
        action="store_false",
        help="do not repeat the memcpy references at the end of the run (drift check)",
    )
    ap.add_argument(
        "--handles",
        choices=Harness.MODES,
        default="prepared",
        help="prepared: one handle per key made before the clock, reposted each rep (as nixlbench); "
        "per-transfer: initialize_xfer/release_xfer_handle around every request, timed",
    )
    ap.add_argument(
        "--net-gbps",
        type=float,
        default=None,
        help=f"+net contenders: daos-sim link, GB/s (default: {NET_LINK_SHARE:g} x the measured "
        f"one-thread copy rate, at most {NET_LINK_MAX_GBPS:g})",
    )
    ap.add_argument(
        "--net-rpc-cost-us",
        type=float,
        default=None,
        help=f"+net contenders: daos-sim rpc_cost, us (default: {NET_RPC_BYTES / 1e6:g} MB / link)",
    )
    ap.add_argument(
        "--net-latency-us",
        type=float,
        default=None,
        help="+net contenders: daos-sim latency (overlapped), us (default 0)",
    )
    ap.add_argument(
        "--glibc-nt-threshold",
        default="",
        help="re-run under GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=<this> (e.g. 0x40000), so "
        "memmoves above it use non-temporal stores as numpy's multi-GiB copies already do",
    )
    ap.add_argument("--shm", type=Path, default=Path("/dev/shm"), help="tmpfs for the POSIX files")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default results/<timestamp>)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument(
        "--strict", action="store_true", help="exit 2 when a target is MISSed (default: a MISS is a finding, exit 0)"
    )
    a = ap.parse_args(argv)
    a.cores = cores
    a.query_threads = [int(x) for x in a.query_threads.split(",") if x.strip()]
    if a.contenders is None:
        a.contenders = "real" if a.real else "memcpy,daos,posix"
        if a.real and os.environ.get("NIXL_DAOS_DFUSE_DIR"):
            a.contenders += ",posix-dfuse"
    if a.passes < 1:
        raise SystemExit(f"--passes {a.passes}: give at least 1")
    if a.real and any(x.strip().startswith("daos") for x in a.contenders.split(",")):
        raise SystemExit("--real runs no daos-sim contender (daos, daos-*): run them without --real")
    if not a.real and any(x.strip().startswith("real") for x in a.contenders.split(",")):
        raise SystemExit("the real-engine contenders (real, real-*) need --real (and DAOS_POOL, NIXL_DAOS_LIBDAOS)")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.glibc_nt_threshold:
        want = f"glibc.cpu.x86_non_temporal_threshold={a.glibc_nt_threshold}"
        if want not in os.environ.get("GLIBC_TUNABLES", ""):  # glibc reads tunables at start-up only
            os.environ["GLIBC_TUNABLES"] = ":".join(x for x in (os.environ.get("GLIBC_TUNABLES"), want) if x)
            os.execv(sys.executable, [sys.executable, "-m", "bench.kv_bench"] + sys.argv[1:])
    names = [x.strip() for x in a.workloads.split(",") if x.strip()]
    workloads = make_workloads(a.scale, names)
    query = "query" in names
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = a.out or REPO / "results" / stamp
    shm = a.shm / f"nixl-daos-bench-{os.getpid()}"

    load = LoadWatch()
    daoskit.prepare_environment(with_posix=True)
    sim = None
    if not a.real:
        sim = daoskit.Sim()
        calm(sim)
        sim.control("reset_data")
        sim.control("reset_stats")
    if a.real and query:
        print("  (no queryMem workload with --real)")
        query = False

    where = (
        f"a real DAOS pool {os.environ.get('DAOS_POOL')} ({os.environ.get('NIXL_DAOS_LIBDAOS')})"
        if a.real
        else "the embedded daos-sim"
    )
    how = (
        (
            f"the fastest of {a.passes} passes per workload over the contenders, balanced order, >= {a.reps} reps each"
            if a.passes > 1
            else f"one pass (each contender over every workload), the fastest of >= {a.reps} reps"
        )
        if a.real
        else f"median of >= {a.reps} reps"
    )
    print(
        f"nixl-daos KV benchmark on {where}: {a.cores} cores, scale {a.scale:g}, {how} "
        f"(short ops repeated to >= {a.min_time:g} s, at most {a.max_reps}; ops of >= {a.max_op_time:g} s "
        f"stop there, after at least 1), window {a.window} key-requests, poll sleep {a.poll_ms:g} ms"
    )
    print(f"  machine at the start: {describe_start(load.start)}")
    print(
        f"  handles: {a.handles}: "
        + (
            "one NIXL request handle per key, made (initialize_xfer) before the clock for each contender, workload "
            "and op, reposted (transfer) by every timed rep, released after (as nixlbench; LMCache reuses prepped "
            "descriptor lists)"
            if a.handles == "prepared"
            else "initialize_xfer and release_xfer_handle around every request, inside the timed region"
        )
        + "; the same harness for every NIXL contender"
    )
    for w in workloads:
        print(f"  {w.describe()}")
    if query:
        print(
            f"  query: {a.query_keys} keys, half present, {a.query_batch} keys per call, threads {a.query_threads} "
            f"(not under +net)"
        )
    print(
        "  each contender times new-key writes (every rep to keys never written, as KV offload writes a block "
        "once: the headline write), then reads of the last rep's keys (written once, as KV offload reads them), then "
        "overwrites of those keys; every read rep is compared in full with the source; +net contenders time no "
        "new-key write (an untimed first write, no modeled network), then overwrites, then reads"
    )
    if a.glibc_nt_threshold:
        print(f"  GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES')}")
    biggest = max([w.nbytes for w in workloads] + [64 * a.query_keys // 2 + 4096])
    t0 = time.perf_counter()
    bufs = Buffers(biggest, a.cores)
    print(f"  buffers: 2 x {biggest / 2**30:.2f} GiB in {time.perf_counter() - t0:.1f} s", flush=True)
    net = None
    if sim is not None:
        net = choose_net(a)
        print(f"  modeled network (+net): daos-sim {', '.join(net.controls())}: {net.why}")
        print(
            f"    (testbed: {TESTBED_GBPS:g} GB/s and ~{TESTBED_RPC_US:g} us per RPC = "
            f"{NET_RPC_BYTES / 1e6:g} MB of link "
            f"time; one RPC per key of 40 x 1 MiB vs 40 RPCs: "
            f"{net.bound_s(40 * MiB, 40) / net.bound_s(40 * MiB, 1):.2f}x by the model; 64 x 4 KiB: "
            f"{net.bound_s(64 * 4096, 64) / net.bound_s(64 * 4096, 1):.1f}x)",
            flush=True,
        )

    bench = Bench(a, sim, bufs)
    passes: list[int] = []
    try:
        if a.real and a.real_warmup_gib > 0:
            real_warmup(bench, a.real_warmup_gib, workloads)
        contenders = build_contenders(a, sim, shm, a.cores, net)
        passes = list(range(a.passes)) if a.real else []
        if len(passes) > 1:
            # A real engine: each workload in --passes passes over the contenders, in a balanced
            # order (kv_passes.order), so that every contender meets the engine as it is at that
            # time, in every position and after every other (kv_harness.merge_passes says why).
            # memcpy, the reference, stays first and its "(end)" copy last. With --passes 1 each
            # contender runs every workload in one go, on one NIXL agent (its backend made once),
            # as the pil4dfs contender needs: run in passes, an agent per workload and pass, it
            # hung in its ninth (ci/bench.sh).
            ref = [c for c in contenders if isinstance(c, MemcpyContender)]
            rest = [c for c in contenders if c not in ref]
            head = [c for c in ref if not c.name.endswith("(end)")]
            tail = [c for c in ref if c.name.endswith("(end)")]
            period = len(rest) * (2 if len(rest) % 2 else 1)
            if len(rest) > 1 and a.passes % period:
                print(f"  (--passes {a.passes}: the order balances fully over a multiple of {period} passes)")
            for w in workloads:
                for p in passes:
                    cs = head + [c for c in kv_passes.order(rest, p) if c.name not in bench.unavailable] + tail
                    print(f"- {w.name}, pass {p + 1} of {a.passes}: {', '.join(c.name for c in cs)}", flush=True)
                    for c in cs:
                        first = len(bench.rows)
                        try:
                            bench.run_contender(c, [w], query)
                        finally:  # also the rows of a pass that aborted
                            for r in bench.rows[first:]:
                                r.pass_no = p
        else:
            for c in contenders:
                bench.run_contender(c, workloads, query)
    except Exception as e:
        bench.failures.append(f"aborted: {type(e).__name__}: {e}")
        if a.real and bench.current_kind == "daos":  # the plugin's pool (not a POSIX contender's failure)
            bench.failures[-1] += f" ({real_pool.space_hint()})"
        print(f"ERROR: {bench.failures[-1]}", file=sys.stderr)
    finally:
        if passes:  # also after an abort: one row per (contender, workload, op)
            bench.rows = merge_passes(bench.rows)
        if sim is not None:
            calm(sim)
        if shm.exists():
            for p in shm.iterdir():
                p.unlink()
            shm.rmdir()

    meta = {
        "when": stamp,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "workloads": [w.__dict__ | {"nbytes": w.nbytes} for w in workloads],
        # The defaults the DAOS contenders ran with (chunk_bytes sets the RPCs a request sends: one
        # per dkey, i.e. per chunk of each key).
        "plugin_params": daoskit.plugin_params(),
        "handles": a.handles,
        "where": "real" if a.real else "daos-sim",
        "net_model": {
            "bandwidth_gbps": net.gbps,
            "rpc_cost_us": net.rpc_cost_us,
            "latency_us": net.latency_us,
            "copy_gbps": net.copy_gbps,
            "why": net.why,
        }
        if net
        else {},
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
        # the reference C++ plugin's settings (its environment), where it ran
        "cpp_plugin": {
            k: os.environ[k]
            for k in ("NIXL_DAOS_CPP_PLUGIN", "NIXL_DAOS_THREADS", "NIXL_DAOS_EQ_TIMEOUT")
            if k in os.environ
        }
        if any(c.strip() == "real-cpp" for c in a.contenders.split(","))
        else {},
        "dfs_plugin": {k: os.environ[k] for k in ("NIXL_DAOS_DFS_PLUGIN",) if k in os.environ}
        if any(c.strip() == "real-dfs" for c in a.contenders.split(","))
        else {},
        "failures": bench.failures,
        "load": load.stop(),
    }
    met = kv_report.report(bench.rows, meta, out, plot=not a.no_plot)
    if bench.failures:
        return 1
    return 2 if a.strict and not met else 0


if __name__ == "__main__":
    sys.exit(main())
