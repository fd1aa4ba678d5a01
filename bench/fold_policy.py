# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Fold policies side by side: new-key writes and reads of KV layouts through NIXL, one request
per key, for fold=true, fold=false and fold=auto at several rpc_target_bytes, on a real DAOS
engine (--real: the pool in DAOS_POOL through the libdaos in NIXL_DAOS_LIBDAOS, as
`daos-local.sh env` sets them) or on the embedded daos-sim (default).

Each measurement writes to keys never written before (as KV offload does) and reads them back,
verified in full. Policies are interleaved within a round, in an order that alternates from
round to round, and every (round, layout, policy) gets a container of its own, destroyed after
it (on a real pool, with the `daos` tool from DAOS_LOCAL_BIN or PATH), so the pool never fills.
The best of the rounds counts (noise on a shared machine only ever slows a run down). Prints one
table: GB/s per policy, and the ratio of each auto policy to the better of fold=true and fold=false.
The fixed policies run in containers of one dkey per key (chunk_bytes=0, the layout before
chunks); the default target's auto policies run at each --chunks value (default: 0 and the
plugin's default chunk_bytes), so the table separates what chunks add from what folding does.

    .venv/bin/python -m bench.fold_policy [--real] [--rounds 3] [--layouts 1m40,1m10,64k,4k,8m]
                                          [--targets 262144,1048576,4194304] [--out DIR]
                                          [--policies fold,nofold,auto] [--chunks 0,4194304] [--hashed-chunks]
                                          [--window 64] [--sim-model "rpc_cost 40; ..."]

(from the repository root). The table's header gives the machine's load at the start and at the
end (bench/machine_load.py; CONTENDED when it exceeded the CPU count), and so does the JSON.
Exit status: 0 when every measurement ran and read back right (the default's PASS/MISS is a
finding), 1 otherwise.

A layout is a name below or KEYSxLAYERSxBLOCK (e.g. 64x1x4k, 16x32x16k, 8x1x2m). --sim-model sends
daos-sim control commands (its cost model) once, before the first measurement; bench/calibrate.py fits one
to the real engine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

MiB, KiB, GB = 1 << 20, 1 << 10, 1e9

# name: (keys, layers per key, bytes per layer); the first four are the layouts
LAYOUTS = {
    "1m40": (10, 40, MiB),
    "1m10": (40, 10, MiB),
    "64k": (200, 8, 64 * KiB),
    "4k": (64, 64, 4 * KiB),
    "8m": (40, 1, 8 * MiB),  # LMCache: one 8 MiB chunk per key
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m bench.fold_policy",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument(
        "--real", action="store_true", help="a real DAOS pool (DAOS_POOL, NIXL_DAOS_LIBDAOS) instead of daos-sim"
    )
    ap.add_argument(
        "--policies", default="fold,nofold,auto", help="comma list of fold, nofold, auto (one per --targets)"
    )
    ap.add_argument("--sim-model", default="", help="daos-sim control commands, ';'-separated (daos-sim only)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds over every layout and policy; the best counts")
    ap.add_argument("--layouts", default="1m40,1m10,64k,4k,8m", help=f"comma list of {', '.join(LAYOUTS)}")
    ap.add_argument("--targets", default="262144,1048576,4194304", help="rpc_target_bytes of the fold=auto policies")
    ap.add_argument(
        "--default-target", type=int, default=None, help="the target to rate (default: the plugin's default)"
    )
    ap.add_argument(
        "--spreads",
        default=None,
        help="spread_rpcs values of the default target's policies (default: 0 and the plugin's default); the "
        "other targets run with spreading off, as fixed policies",
    )
    ap.add_argument(
        "--chunks",
        default=None,
        help="chunk_bytes values of the default target's policies (default: 0 and the plugin's default); the "
        "fixed policies and the other targets run with one dkey per key (0), as before chunks",
    )
    ap.add_argument(
        "--hashed-chunks",
        action="store_true",
        help="also run each chunked policy with spread_chunks=false (its name ends in 'h'): chunks placed where "
        "their dkey's hash falls rather than round the object's groups",
    )
    ap.add_argument("--window", type=int, default=64, help="key-requests in flight")
    ap.add_argument("--num-queues", type=int, default=0, help="plugin num_queues (0: its default)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    return ap.parse_args(argv)


a = parse_args()
if a.real:
    from bench.testbed import use_real_pool

    use_real_pool()  # every measurement names its own container
os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")  # one INFO line per agent otherwise

from bench import kv_bench, real_pool  # noqa: E402
from bench.kv_bench import Buffers, Harness, Workload, daoskit  # noqa: E402
from bench.machine_load import RULE, LoadWatch, describe, verdict  # noqa: E402


def parse_layout(spec: str) -> tuple[int, int, int]:
    """A LAYOUTS name or KEYSxLAYERSxBLOCK, BLOCK in bytes or with a k/m suffix (KiB/MiB)."""
    if spec in LAYOUTS:
        return LAYOUTS[spec]
    try:
        k, layers, b = spec.lower().split("x")
        mult = {"k": KiB, "m": MiB}.get(b[-1:], 1)
        dims = int(k), int(layers), int(b.rstrip("km")) * mult
    except ValueError:
        dims = (0, 0, 0)
    if min(dims) <= 0:
        raise SystemExit(f"--layouts: {spec!r} is neither one of {', '.join(LAYOUTS)} nor KEYSxLAYERSxBLOCK (64x1x4k)")
    return dims


def policy_name(p: dict[str, str]) -> str:
    if p["fold"] != "auto":
        return {"true": "fold", "false": "nofold"}[p["fold"]]
    t = int(p["rpc_target_bytes"])
    name = f"auto {t // MiB}M" if t >= MiB and t % MiB == 0 else f"auto {t // KiB}K"
    spread = int(p.get("spread_rpcs", "0"))
    name = f"{name}+s{spread}" if spread else name
    chunk = int(p.get("chunk_bytes", "0"))
    if chunk:
        name += f"+c{chunk // MiB}M" if chunk >= MiB else f"+c{chunk // KiB}K"
        name += "h" if p.get("spread_chunks") == "false" else ""
    return name


class Measure:
    def __init__(self, bufs: Buffers, sim):
        self.bufs, self.sim = bufs, sim
        self.harness = Harness(a.window, 0.001, 600.0)
        self.dev = 1 << 40

    def drop_container(self, label: str) -> None:
        if not a.real:
            self.sim.control("reset_data")
            return
        # The engine reclaims the space in the background, on the CPUs the next measurements
        # need (bench/real_pool.py): the policy order alternates by round to even that out.
        real_pool.destroy_container(label)

    def one(self, w: Workload, params: dict[str, str]) -> dict:
        """New-key write then read of `w` on a fresh container; seconds of each and RPCs (sim)."""
        from nixl_cu12._api import nixl_agent, nixl_agent_config

        label = f"fold-{uuid.uuid4().hex[:12]}"
        p = dict(params, container=label, create_container="true")
        if a.real:
            # Off the clock: destroyed containers give their space back only as the engine
            # reclaims it, and a pool short of it makes the plugin evict this measurement's own
            # keys (a 4 GiB pool after ~35 GiB of rounds: its reads failed as misses).
            real_pool.wait_for_space(4 * w.nbytes, f"{w.name} {policy_name(params)}")
        else:
            # daos-sim's RPC counts are recorded per run; eviction's index writes would move them.
            p.setdefault("evict", "false")
        if a.num_queues:
            p["num_queues"] = str(a.num_queues)
        agent = nixl_agent(f"fp-{label}", nixl_agent_config(backends=[]))
        try:
            agent.create_backend(daoskit.BACKEND, p)
            dram = agent.register_memory(
                [(self.bufs.src.ctypes.data, w.nbytes, 0, ""), (self.bufs.dst.ctypes.data, w.nbytes, 0, "")],
                "DRAM",
                backends=[daoskit.BACKEND],
            )
            # Untimed: the first I/O to a new container opens it on the engine and loads the
            # object's layout in the client, which a long-running KV store has done long before.
            warm = self.dev
            self.dev += 1
            wobj = agent.register_memory([(0, 4096, warm, "")], "OBJ", backends=[daoskit.BACKEND])
            for op in ("WRITE", "READ"):
                local = agent.get_xfer_descs(
                    [(self.bufs.src.ctypes.data if op == "WRITE" else self.bufs.dst.ctypes.data, 4096, 0)], "DRAM"
                )
                remote = agent.get_xfer_descs([(0, 4096, warm)], "OBJ")
                self.harness.drive(agent, op, [(local, remote)])
            agent.deregister_memory(wobj, backends=[daoskit.BACKEND])
            devs = list(range(self.dev, self.dev + w.keys))
            self.dev += w.keys
            objs = agent.register_memory([(0, w.key_bytes, d, "") for d in devs], "OBJ", backends=[daoskit.BACKEND])
            c = kv_bench.NixlContender("x", {})
            c.agent, c.mem = agent, "OBJ"
            out = {}
            for op, buf in (("WRITE", self.bufs.src), ("READ", self.bufs.dst)):
                reqs = c.requests(w, buf, devs)
                handles = self.harness.make_handles(agent, op, reqs)
                if op == "READ":
                    self.bufs.poison(w)
                before = self.sim.stats() if self.sim else None
                c0 = time.process_time()  # this process's CPU (all threads): the client's, on a real engine
                dt, _ = self.harness.drive(agent, op, reqs, handles)
                out[op], out[op + "_cpu"] = dt, time.process_time() - c0
                if before is not None:
                    key = "update" if op == "WRITE" else "fetch"
                    out[op + "_rpcs"] = self.sim.stats()[key] - before[key]
                self.harness.release_handles(agent, handles)
            bad = self.bufs.first_mismatch(w.nbytes)
            if bad is not None:
                raise RuntimeError(f"{w.name} {policy_name(params)}: read-back differs from the source at byte {bad}")
            agent.deregister_memory(objs, backends=[daoskit.BACKEND])
            agent.deregister_memory(dram, backends=[daoskit.BACKEND])
        finally:
            del agent  # the backend engine (and its container handle) goes with the agent
            self.drop_container(label)
        return out


def main() -> int:
    load = LoadWatch()
    daoskit.prepare_environment()
    defaults = daoskit.plugin_params()
    target = a.default_target or int(defaults["rpc_target_bytes"])
    default_spread = int(defaults.get("spread_rpcs", "0"))
    spreads = sorted({int(x) for x in (a.spreads or f"0,{default_spread}").split(",") if x.strip()})
    targets = sorted({int(x) for x in a.targets.split(",") if x.strip()} | {target})
    wanted = {x.strip() for x in a.policies.split(",") if x.strip()}
    unknown = wanted - {"fold", "nofold", "auto"}
    if unknown or not wanted:
        raise SystemExit(f"--policies: {sorted(unknown) or 'nothing'} given; choose from fold, nofold, auto")
    default_chunk = int(defaults.get("chunk_bytes", "0"))
    chunks = sorted({int(x) for x in (a.chunks or f"0,{default_chunk}").split(",") if x.strip()})
    fixed = (("fold", {"fold": "true", "chunk_bytes": "0"}), ("nofold", {"fold": "false", "chunk_bytes": "0"}))
    policies = [p for n, p in fixed if n in wanted]
    if "auto" in wanted:
        for t in targets:
            for sp in spreads if t == target else [0]:
                for c in chunks if t == target else [0]:
                    auto = {"fold": "auto", "rpc_target_bytes": str(t), "spread_rpcs": str(sp), "chunk_bytes": str(c)}
                    policies.append(auto)
                    if c and a.hashed_chunks:
                        policies.append({**auto, "spread_chunks": "false"})
    layouts = [Workload(n.strip(), *parse_layout(n.strip())) for n in a.layouts.split(",") if n.strip()]
    sim = None
    if not a.real:
        sim = daoskit.Sim()
        kv_bench.calm(sim)
        sim.control("reset_data")
        for cmd in filter(None, (c.strip() for c in a.sim_model.split(";"))):
            sim.control(cmd)
    elif a.sim_model:
        raise SystemExit("--sim-model applies to daos-sim only, not with --real")
    where = (
        f"real DAOS pool {os.environ.get('DAOS_POOL')} via {os.environ.get('NIXL_DAOS_LIBDAOS')}"
        if a.real
        else f"daos-sim ({a.sim_model or 'no modeled cost'})"
    )
    print(
        f"fold policies on {where}: new-key writes and reads, one NIXL request per key, window {a.window}, "
        f"best of {a.rounds} rounds (policies interleaved, their order alternating by round, a fresh container each)"
    )
    bufs = Buffers(max(w.nbytes for w in layouts), max(1, len(os.sched_getaffinity(0))))
    m = Measure(bufs, sim)
    best: dict[tuple[str, str], dict] = {}
    t0 = time.perf_counter()
    for r in range(a.rounds):
        for w in layouts:
            # The policy order alternates from round to round (ABBA): whatever runs right after a
            # container's destroy shares the engine with the reclaim of its space (real_pool.py),
            # so a fixed order would favour one policy.
            for p in policies if r % 2 == 0 else policies[::-1]:
                try:
                    got = m.one(w, p)
                except Exception:
                    if a.real:
                        print(f"  {w.name} {policy_name(p)} failed; {real_pool.space_hint()}", file=sys.stderr)
                    raise
                k = (w.name, policy_name(p))
                b = best.setdefault(k, {"WRITE": float("inf"), "READ": float("inf")})
                for op in ("WRITE", "READ"):
                    b[op] = min(b[op], got[op])
                    b[op + "_cpu"] = min(b.get(op + "_cpu", float("inf")), got[op + "_cpu"])
                    b.setdefault(op + "_rounds", []).append(got[op])
                    if op + "_rpcs" in got:
                        b[op + "_rpcs"] = got[op + "_rpcs"]
            print(f"  round {r + 1}: {w.describe()} done ({time.perf_counter() - t0:.0f} s)", flush=True)

    load.stop()
    names = [policy_name(p) for p in policies]
    dname = policy_name(
        {
            "fold": "auto",
            "rpc_target_bytes": str(target),
            "spread_rpcs": str(default_spread),
            "chunk_bytes": str(default_chunk),
        }
    )
    rated = "fold" in names and "nofold" in names  # the ratios need both fixed policies
    print(f"\n{describe(load.stop())}")
    print(f"GB/s, new-key write / read (best of {a.rounds})", end="")
    print(f"; 'vs best' = {dname} (the default) / the better of fold and nofold" if rated and dname in names else "")
    head = f"{'layout':<26}" + "".join(f"{n:>15}" for n in names)
    print(head + (f"{'vs best W/R':>14}" if rated and dname in names else ""))
    rows = []
    for w in layouts:
        g = {n: {op: w.nbytes / best[(w.name, n)][op] / GB for op in ("WRITE", "READ")} for n in names}
        ratio = {}
        if rated:
            ref = {op: max(g["fold"][op], g["nofold"][op]) for op in ("WRITE", "READ")}
            ratio = {n: {op: g[n][op] / ref[op] for op in ref} for n in names}
        desc = f"{w.keys}x{w.layers}x{w.block // MiB}M" if w.block >= MiB else f"{w.keys}x{w.layers}x{w.block // KiB}K"
        line = f"{desc:<26}" + "".join(f"{g[n]['WRITE']:>7.2f}/{g[n]['READ']:<7.2f}" for n in names)
        if dname in ratio:
            line += f"{ratio[dname]['WRITE']:>7.2f}/{ratio[dname]['READ']:<6.2f}"
        print(line)
        rows.append(
            {
                "layout": w.name,
                "keys": w.keys,
                "layers": w.layers,
                "block": w.block,
                "gbps": g,
                "seconds": {n: {op: best[(w.name, n)][op] for op in ("WRITE", "READ")} for n in names},
                "cpu_seconds": {n: {op: best[(w.name, n)][op + "_cpu"] for op in ("WRITE", "READ")} for n in names},
                # every round's seconds, in round order (policies of one round ran next to each other)
                "round_seconds": {
                    n: {op: best[(w.name, n)][op + "_rounds"] for op in ("WRITE", "READ")} for n in names
                },
                "ratio_to_best": ratio,
                "rpcs": {n: {op: best[(w.name, n)].get(op + "_rpcs") for op in ("WRITE", "READ")} for n in names},
            }
        )
    if rated:
        print("\nratio to the better of fold/nofold, write / read")
        print(f"{'layout':<26}" + "".join(f"{n:>15}" for n in names))
        for row in rows:
            r = row["ratio_to_best"]
            print(f"{row['layout']:<26}" + "".join(f"{r[n]['WRITE']:>7.2f}/{r[n]['READ']:<7.2f}" for n in names))
    if rated and dname in names:
        worst = min(min(r["ratio_to_best"][dname].values()) for r in rows)
        wins = [r["layout"] for r in rows if min(r["ratio_to_best"][dname].values()) > 1.0]
        print(
            f"\n{dname}: worst ratio {worst:.2f} (target >= 0.90: {'PASS' if worst >= 0.9 else 'MISS'}); "
            f"beats both fixed policies on: {', '.join(wins) or 'none'}"
        )
    # The best round hides how far the rounds spread; the medians and each policy's slowest and
    # fastest round show it (one loaded round moves a best-of figure, not a median).
    print(f"\nmedian of {a.rounds} rounds, GB/s write / read [slowest-fastest write]", end="")
    print(f"; 'vs best' by medians = {dname} / the better of fold and nofold" if rated and dname in names else "")
    print(head + (f"{'vs best W/R':>14}" if rated and dname in names else ""))
    for w, row in zip(layouts, rows):
        rounds = row["round_seconds"]
        med = {n: {op: w.nbytes / statistics.median(rounds[n][op]) / GB for op in rounds[n]} for n in names}
        row["median_gbps"] = med
        line = f"{row['layout']:<26}" + "".join(f"{med[n]['WRITE']:>7.2f}/{med[n]['READ']:<7.2f}" for n in names)
        if rated and dname in names:
            rm = {op: med[dname][op] / max(med["fold"][op], med["nofold"][op]) for op in ("WRITE", "READ")}
            row["ratio_to_best_median"] = rm
            line += f"{rm['WRITE']:>7.2f}/{rm['READ']:<6.2f}"
        print(line)
        spans = [
            f"[{w.nbytes / max(rounds[n]['WRITE']) / GB:.2f}-{w.nbytes / min(rounds[n]['WRITE']) / GB:.2f}]"
            for n in names
        ]
        print(f"{'':<26}" + "".join(f"{s:>15}" for s in spans))
    others = [n for n in names if n != dname]
    if dname in names and others:
        # The bar: the default at least even with the best other policy in every cell.
        print(f"\n{dname} / the best other policy ({', '.join(others)}), write / read")
        for row in rows:
            g = row["gbps"]
            rw = {op: g[dname][op] / max(g[n][op] for n in others) for op in ("WRITE", "READ")}
            row["ratio_to_best_other"] = rw
            print(f"{row['layout']:<26}{rw['WRITE']:>7.2f}/{rw['READ']:<7.2f}")
    print(f"this run: {verdict(load.stop())}; {RULE}")
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "fold_policy.json").write_text(
            json.dumps(
                {
                    "where": where,
                    "sim_model": a.sim_model,
                    "rounds": a.rounds,
                    "default": dname,
                    "load": load.stop(),
                    "rows": rows,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
