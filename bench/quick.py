#!/usr/bin/env python3
"""Quick KV-offload run through NIXL against the embedded daos-sim (a placeholder until the full
benchmark lands): KVBM's layer-separate layout (one key per block, one descriptor per layer),
written then read back in one transfer each, with folding on and off. Prints GB/s and the RPC
counts from daos-sim's stats, and writes the figures to results/<timestamp>/quick.json.

    .venv/bin/python bench/quick.py [--keys 16] [--layers 40] [--layer-kib 1024] [--latency-us 0]
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

import numpy as np  # noqa: E402

import daoskit  # noqa: E402


def run(sim, fold: bool, keys: int, layers: int, layer_bytes: int, repeat: int) -> dict:
    agent = daoskit.DaosAgent(params={"fold": str(fold).lower()})
    total = keys * layers * layer_bytes
    src, dst = daoskit.pattern(total, 7), np.zeros(total, np.uint8)
    agent.reg_dram(src)
    agent.reg_dram(dst)
    devs = [agent.reg_obj("", layers * layer_bytes) for _ in range(keys)]
    local_w, remote = daoskit.kvbm_layer_separate(src, devs, layers, layer_bytes)
    local_r, _ = daoskit.kvbm_layer_separate(dst, devs, layers, layer_bytes)
    best = {"WRITE": float("inf"), "READ": float("inf")}
    stats = {}
    for _ in range(repeat):
        for op, local in (("WRITE", local_w), ("READ", local_r)):
            with daoskit.StatsDelta(sim) as d:
                best[op] = min(best[op], agent.xfer(op, local, remote, timeout=600))
            stats[op] = d.delta
    daoskit.assert_same(dst, src, "read-back")
    agent.close()
    sim.control("reset_data")
    return {
        "fold": fold,
        "bytes": total,
        "descriptors": keys * layers,
        "write_gbps": total / best["WRITE"] / 1e9,
        "read_gbps": total / best["READ"] / 1e9,
        "update_rpcs": stats["WRITE"]["update"],
        "fetch_rpcs": stats["READ"]["fetch"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=16, help="blocks, one DAOS key each")
    ap.add_argument("--layers", type=int, default=40, help="descriptors per key")
    ap.add_argument("--layer-kib", type=int, default=1024, help="bytes per descriptor, in KiB")
    ap.add_argument("--repeat", type=int, default=3, help="runs per direction; the best counts")
    ap.add_argument("--latency-us", type=float, default=0.0, help="daos-sim latency per RPC")
    ap.add_argument("--bandwidth-gbps", type=float, default=0.0, help="daos-sim link bandwidth (0: unlimited)")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default results/<timestamp>)")
    a = ap.parse_args()

    daoskit.prepare_environment()
    sim = daoskit.Sim()
    sim.calm()
    sim.control(f"latency {a.latency_us}")
    sim.control(f"bandwidth {a.bandwidth_gbps}")
    layer_bytes = a.layer_kib * 1024
    rows = [run(sim, fold, a.keys, a.layers, layer_bytes, a.repeat) for fold in (True, False)]
    sim.calm()

    print(
        f"\nnixl-daos quick run on daos-sim: {a.keys} keys x {a.layers} layers x {a.layer_kib} KiB "
        f"= {rows[0]['bytes'] / 2**20:.0f} MiB per direction; sim latency {a.latency_us:g} us, "
        f"bandwidth {a.bandwidth_gbps or 'unlimited'} GB/s; best of {a.repeat}"
    )
    print(f"{'fold':>5} {'write GB/s':>11} {'read GB/s':>10} {'update RPCs':>12} {'fetch RPCs':>11} {'RPCs/GB':>8}")
    for r in rows:
        per_gb = (r["update_rpcs"] + r["fetch_rpcs"]) / (2 * r["bytes"] / 1e9)
        print(
            f"{'on' if r['fold'] else 'off':>5} {r['write_gbps']:>11.2f} {r['read_gbps']:>10.2f} "
            f"{r['update_rpcs']:>12} {r['fetch_rpcs']:>11} {per_gb:>8.1f}"
        )

    out = a.out or daoskit.REPO / "results" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    (out / "quick.json").write_text(
        json.dumps({"args": {k: str(v) for k, v in vars(a).items()}, "runs": rows}, indent=1)
    )
    print(f"figures: {out / 'quick.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
