# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Many client processes on one pool: aggregate throughput of 1, 2, 4, 8 processes (one NIXL agent
with the plugin each) writing and reading keys of their own in one shared container, with every
byte verified, per-process fairness and errors.

Each process registers its buffers and creates its backend before a common start time, then
writes its keys (new keys, one request per key, all in flight), waits for all of them, reads
them back into a poisoned buffer and compares. Aggregate GB/s of a phase = every process's bytes
over the time from the first process's start to the last one's end; fairness = the slowest
process's GB/s over the fastest's. A fresh container per client count, destroyed after it.

    .venv/bin/python -m bench.many_clients [--real] [--clients 1,2,4,8] [--keys 16] [--key-mib 4] [--out DIR]

(from the repository root; --real: the pool in DAOS_POOL through NIXL_DAOS_LIBDAOS, as
`daos-local.sh env` sets them; default daos-sim, where each process has its own in-memory
engine, so only --real measures sharing). Exit 1 when a process failed or read wrong bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

MiB, GB = 1 << 20, 1e9


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.many_clients", description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true", help="a real DAOS pool (DAOS_POOL, NIXL_DAOS_LIBDAOS)")
    ap.add_argument("--clients", default="1,2,4,8", help="comma list of process counts")
    ap.add_argument("--keys", type=int, default=16, help="keys per process")
    ap.add_argument("--key-mib", type=int, default=4, help="MiB per key (one descriptor)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per client count; the best aggregate counts")
    ap.add_argument("--out", type=Path, default=None)
    # one worker process (internal)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--container", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def worker(a) -> int:
    """One client: create the backend, wait for the common start, write, read, verify; one JSON line."""
    if a.real:
        from bench.testbed import use_real_pool

        use_real_pool(a.container)
    os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")
    import numpy as np

    from tests.e2e import daoskit

    size = a.key_mib * MiB
    out: dict = {"worker": a.worker, "pid": os.getpid()}
    d = daoskit.DaosAgent(params={"container": a.container, "create_container": "true"})
    src = daoskit.pattern(a.keys * size, seed=1000 + a.worker)
    dst = np.zeros_like(src)
    d.reg_dram(src)
    d.reg_dram(dst)
    devs = [d.reg_obj(f"mc-{a.container}-{a.worker}-{k}", size) for k in range(a.keys)]

    def phase(op: str, buf) -> tuple[float, float]:
        handles = [d.post(op, [(daoskit.addr(buf, k * size), size, 0)], [(0, size, dev)]) for k, dev in enumerate(devs)]
        t0 = time.time()
        for h, state in handles:
            d.wait(h, state, timeout=120)
        t1 = time.time()
        for h, _ in handles:
            d.release(h)
        return t0, t1

    # Untimed: the first I/O of a process to the container opens it on the engine and loads the
    # object's layout, which a long-running KV cache has done long before.
    warm = d.reg_obj(f"mc-{a.container}-{a.worker}-warm", 4096)
    d.xfer("WRITE", [(daoskit.addr(src), 4096, 0)], [(0, 4096, warm)])
    d.xfer("READ", [(daoskit.addr(dst), 4096, 0)], [(0, 4096, warm)])
    delay = a.start_at - time.time()
    out["late_s"] = max(0.0, -delay)
    if delay > 0:
        time.sleep(delay)
    try:
        w0 = time.time()
        _, w1 = phase("WRITE", src)
        r0 = time.time()
        _, r1 = phase("READ", dst)
        out.update(write=[w0, w1], read=[r0, r1], bytes=src.nbytes, wrong=int(np.count_nonzero(dst != src)))
    except Exception as e:  # a failed request: reported, not raised (the parent counts it)
        out["error"] = f"{type(e).__name__}: {e}"[:300]
    d.close()
    print(json.dumps(out), flush=True)
    return 0


def run_count(a, n: int) -> dict:
    label = f"mc-{uuid.uuid4().hex[:10]}"
    # Long enough for n agents to create their backends (a few seconds each on a loaded machine).
    start_at = time.time() + 5 + 1.5 * n
    cmd = [sys.executable, "-m", "bench.many_clients", "--keys", str(a.keys), "--key-mib", str(a.key_mib)]
    cmd += ["--container", label, "--start-at", str(start_at)] + (["--real"] if a.real else [])
    procs = [
        subprocess.Popen([*cmd, "--worker", str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(n)
    ]
    results, errors = [], []
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=600)
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if p.returncode != 0 or not lines:
            errors.append(f"worker {i}: exit {p.returncode}: {err.strip().splitlines()[-1:] or ''}")
            continue
        r = json.loads(lines[-1])
        if "error" in r:
            errors.append(f"worker {i}: {r['error']}")
        elif r["wrong"]:
            errors.append(f"worker {i}: {r['wrong']} bytes read back wrong")
        results.append(r)
    if a.real:
        from bench import real_pool

        real_pool.destroy_container(label)
    row: dict = {"clients": n, "errors": errors, "late_s": max((r.get("late_s", 0) for r in results), default=0)}
    ok = [r for r in results if "write" in r]
    for op in ("write", "read"):
        if len(ok) != n:
            break
        t0, t1 = min(r[op][0] for r in ok), max(r[op][1] for r in ok)
        per = [r["bytes"] / (r[op][1] - r[op][0]) / GB for r in ok]
        row[op] = {
            "aggregate_gbps": sum(r["bytes"] for r in ok) / (t1 - t0) / GB,
            "per_process_gbps": per,
            "fairness": min(per) / max(per),
        }
    return row


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.worker is not None:
        return worker(a)
    from bench.machine_load import RULE, LoadWatch, describe, verdict

    load = LoadWatch()
    counts = [int(x) for x in a.clients.split(",") if x.strip()]
    where = f"real DAOS pool {os.environ.get('DAOS_POOL')}" if a.real else "daos-sim (one engine per process)"
    print(
        f"many clients on {where}: each process {a.keys} keys x {a.key_mib} MiB, new-key writes then reads, all of a "
        f"process's requests in flight, bytes verified; best of {a.rounds} rounds",
        flush=True,
    )
    rows, failed = [], []
    for n in counts:
        best = None
        for _ in range(a.rounds):
            row = run_count(a, n)
            failed += [f"{n} clients: {e}" for e in row["errors"]]
            if "read" in row and (best is None or row["write"]["aggregate_gbps"] > best["write"]["aggregate_gbps"]):
                best = row
            print(f"  {n} clients: {json.dumps({k: v for k, v in row.items() if k != 'errors'})[:300]}", flush=True)
        rows.append(best or {"clients": n})
    print(f"\n{describe(load.stop())}")
    print(f"{'clients':>7}  {'write agg GB/s':>14} {'fairness':>8}  {'read agg GB/s':>13} {'fairness':>8}")
    for r in rows:
        if "read" not in r:
            print(f"{r['clients']:>7}  failed")
            continue
        w, rd = r["write"], r["read"]
        print(
            f"{r['clients']:>7}  {w['aggregate_gbps']:>14.2f} {w['fairness']:>8.2f}  {rd['aggregate_gbps']:>13.2f} "
            f"{rd['fairness']:>8.2f}"
        )
    print(f"this run: {verdict(load.stop())}; {RULE}")
    for f in failed:
        print(f"FAILED: {f}")
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "many_clients.json").write_text(json.dumps({"where": where, "rows": rows, "load": load.stop()}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
