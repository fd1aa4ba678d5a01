# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Writes with eviction active against the same writes into an empty pool, side by side in one
run: new KV keys of 4 MiB (16 requests in flight, the plugin's defaults) through the real NIXL
agent, by tests/e2e/evict_fill.py, which also reads every key back and verifies it.

  empty: keys worth a third of the pool into the empty pool (nothing is evicted);
  full:  keys worth three times the pool; its last third runs with the pool full and eviction
         making room, and is what the column shows.

    .venv/bin/python -m bench.evict_bench --sim [--pool-mib 512] [--reclaim-ms 3000] [--out DIR]
    .venv/bin/python -m bench.evict_bench --real --pool-mib 2048   # DAOS_POOL (a pool it may
        fill: ci/bench.sh starts one), NIXL_DAOS_LIBDAOS, DAOS_CONT as for the e2e tests

On daos-sim the pool's capacity and its reclaim delay (how long punched space takes to come
back; 27-31 s measured on the real engine, bench/RECLAIM_FINDINGS.md) are daos-sim settings, so
the figures there show the model at a shorter delay. Prints one table (with the machine's load,
bench/machine_load.py) and one JSON line, also written to DIR/evict.json with --out. Exit status:
1 when a run failed or read back a wrong byte, else 0."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from bench.machine_load import LoadWatch, describe

REPO = Path(__file__).resolve().parent.parent
FILL = REPO / "tests" / "e2e" / "evict_fill.py"
SIZE = 4 << 20

ap = argparse.ArgumentParser(prog="python -m bench.evict_bench", description=__doc__.splitlines()[0])
mode = ap.add_mutually_exclusive_group(required=True)
mode.add_argument("--sim", action="store_true")
mode.add_argument("--real", action="store_true")
ap.add_argument("--pool-mib", type=int, default=512, help="the pool's size (sim: its capacity)")
ap.add_argument("--reclaim-ms", type=int, default=3000, help="daos-sim: delay before punched space returns")
ap.add_argument("--window", type=int, default=16)
ap.add_argument("--out", type=Path, default=None, help="also write the JSON line to DIR/evict.json")
a = ap.parse_args()


def run(tag: str, n: int) -> dict:
    env = dict(os.environ)
    if a.sim:
        env.update(DAOS_SIM_POOL_BYTES=str(a.pool_mib << 20), DAOS_SIM_RECLAIM_MS=str(a.reclaim_ms))
        env.pop("NIXL_DAOS_TESTBED", None)
        # daoskit turns eviction off on daos-sim (for its counting tests): the plugin's default is on.
        # The plugin's reclaim window (40 s by default, from the real engine) set to daos-sim's delay.
        env["NIXL_DAOS_FILL_PARAMS"] = json.dumps({"evict": "true", "evict_reclaim_ms": str(a.reclaim_ms + 500)})
    else:
        env["NIXL_DAOS_TESTBED"] = "1"
    cmd = [sys.executable, str(FILL), f"{tag}-{uuid.uuid4().hex[:8]}", str(n), str(SIZE), str(a.window), "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"{tag}: exit {p.returncode}\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


keys = (a.pool_mib << 20) // SIZE
load = LoadWatch()
empty = run("empty", keys // 3)
full = run("full", 3 * keys)
rec = load.stop()
where = "daos-sim" if a.sim else "real DAOS"
delay = f", reclaim {a.reclaim_ms} ms" if a.sim else ""
print(f"\nEviction on {where}: pool {a.pool_mib} MiB{delay}, new keys of {SIZE >> 20} MiB, {a.window} in flight")
print(describe(rec))
print(f"{'run':<34} {'writes ok':>12} {'GB/s':>7} {'present':>8} {'missing':>8} {'wrong':>6}")


def line(name: str, ok: int, n: int, gbps: float, r: dict) -> None:
    print(f"{name:<34} {f'{ok}/{n}':>12} {gbps:>7.3f} {r['present']:>8} {r['missing']:>8} {r['wrong']:>6}")


e_gbps = empty["succeeded"] * SIZE / empty["seconds"] / 1e9
line("empty pool (1/3 of its size)", empty["succeeded"], empty["attempted"], e_gbps, empty)
f_gbps = full["gbps_by_third"][2]
line("full pool, eviction (last third)", full["succeeded_by_third"][2], full["attempted_by_third"][2], f_gbps, full)
print(f"full / empty: {f_gbps / e_gbps:.3f}x; all writes of the 3x run: {full['succeeded']}/{full['attempted']}")
result = {"where": where, "pool_mib": a.pool_mib, "empty": empty, "full": full, "load": rec}
print(json.dumps(result))
if a.out:
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "evict.json").write_text(json.dumps(result, indent=1))
sys.exit(1 if empty["wrong"] or full["wrong"] else 0)
