# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""One table from bench/kv_bench.py's results: the plugin with its defaults on real DAOS and on
daos-sim, and NIXL POSIX, side by side per workload and op.

    .venv/bin/python -m bench.side_by_side SIM_RESULTS_DIR [REAL_RESULTS_DIR[,MORE_REAL_DIRS]]
                                           [--depth1 REAL_WINDOW1_DIR[,MORE]] [--ceiling CEILING_JSON]

Each directory holds the results.json of one kv_bench.py run (the real run is usually at a
smaller --scale: GB/s compare across columns, bytes per workload are shown per source). Above
the table it prints the machine's load during each run (bench/machine_load.py: CONTENDED when it
exceeded the CPU count); beside each row ours over each peer on the same engine, best to best and
as the median of the pass-by-pass ratios (bench/kv_passes.py).

With --ceiling (bench/ceiling's JSON from the same engine: raw libdaos, no NIXL, the plugin's
RPCs, one per dkey, without its record and checksums, for the same layouts) the real default's
new-key writes and reads are also shown as a ratio of that ceiling; with --depth1 (a kv_bench
--real run at --window 1) a second table gives the real engine one request at a time: ours,
NIXL POSIX on dfuse, the other DAOS plugins (the reference C++ plugin, NIXL PR #2261's libdfs
backend) and the ceiling at depth 1.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from bench import kv_passes, machine_load

OPS = ("write", "overwrite", "read")
# What a DAOS user could run instead of ours, on the same engine: NIXL POSIX on a dfuse mount,
# the same with libpil4dfs, the reference C++ plugin and NIXL PR #2261's libdfs backend
# (kv_contenders.CppPluginContender, DfsPluginContender).
PEERS = ("posix dfuse", "posix pil4dfs", "real cpp", "real dfs")


def peer_short(contender: str) -> str:
    """ "posix dfuse" -> "dfuse", "real cpp" -> "cpp"."""
    return contender.split()[1]


def peer_label(contender: str) -> str:
    return f"real {peer_short(contender)}"


def load(d: Path) -> dict:
    return json.loads((Path(d) / "results.json").read_text())


def gbps(res: dict | None, contender: str, workload: str, op: str) -> float | None:
    for r in (res or {}).get("rows", []):
        if r["contender"] == contender and r["workload"] == workload and r["op"] == op and r["gbps"]:
            return r["gbps"]
    return None


def best_posix(res: dict, workload: str, op: str) -> float | None:
    xs = [
        r["gbps"]
        for r in res.get("rows", [])
        if r["contender"].startswith("posix") and r["workload"] == workload and r["op"] == op and r["gbps"]
    ]
    return max(xs) if xs else None


def pass_map(res: dict | None, contender: str, workload: str, op: str) -> dict[int, float]:
    """{pass: GB/s of its fastest rep} of a contender's row (kv_bench --real), or {}."""
    for r in (res or {}).get("rows", []):
        if r["contender"] == contender and r["workload"] == workload and r["op"] == op:
            return dict(map(tuple, r.get("passes") or []))
    return {}


def pass_median(res: dict | None, a: str, b: str, workload: str, op: str) -> float | None:
    """Median over the passes both ran of a's GB/s over b's (kv_bench --real interleaves its
    contenders pass by pass: bench/kv_passes.py), or None without pass figures."""
    rs = kv_passes.pass_ratios(pass_map(res, a, workload, op), pass_map(res, b, workload, op))
    return statistics.median(rs) if rs else None


def merged(runs: list[dict]) -> dict:
    """The first run (its settings, load, workloads) with the rows of all of them."""
    out = dict(runs[0])
    out["rows"] = [r for res in runs for r in res.get("rows", [])]
    return out


def vs_peer(runs: list[dict], peer: str, workload: str, op: str) -> str | None:
    """ "vs <peer> <ours / peer> (passes <median of the pass-by-pass ratios>)", both taken in the
    first run that has the peer: the run it was interleaved with ours in (the other DAOS plugins
    run beside ours in runs of their own, ci/bench-real.sh). A run without ours (pil4dfs, in a
    process of its own) takes ours from the first run, and has no pass figure."""
    home = next((res for res in runs if gbps(res, peer, workload, op)), None)
    if home is None:
        return None
    other = gbps(home, peer, workload, op)
    ours = gbps(home, "real default", workload, op) or gbps(runs[0], "real default", workload, op)
    if not ours:
        return None
    m = pass_median(home, "real default", peer, workload, op)
    return f"vs {peer_short(peer)} {ours / other:.2f}" + (f" (passes {m:.2f})" if m else "")


def other_loads(runs: list[dict], label: str) -> None:
    """The machine's load during each run after the first (their peers' ratios come from them)."""
    for res in runs[1:]:
        names = sorted({r["contender"] for r in res.get("rows", []) if r["contender"] != "real default"})
        print(f"{label} ({', '.join(names)}): {machine_load.describe(res.get('load'))}")


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def sizes(res: dict | None) -> dict[str, str]:
    out = {}
    for w in (res or {}).get("workloads", []):
        out[w["name"]] = f"{w['keys']}x{w['layers']}x{w['block'] // 1024}K"
    return out


def ceiling_cell(ceiling: dict | None, res: dict | None, workload: str, depth: str) -> dict | None:
    """The ceiling's cell for `workload` of `res` (matched by keys, descriptors and block), in the
    shape ci/bench-real.sh runs (sized: one RPC per chunk, as the plugin sends), at depth "all" or
    "1"."""
    w = next((w for w in (res or {}).get("workloads", []) if w["name"] == workload), None)
    for c in (ceiling or {}).get("cells", []) if w else []:
        if (c["keys"], c["layers"], c["block"]) == (w["keys"], w["layers"], w["block"]):
            if c["shape"] == "sized" and c["depth"] == depth:
                return c
    return None


def ceiling_gbps(ceiling: dict | None, res: dict | None, workload: str, op: str, depth: str) -> float | None:
    """The ceiling's best GB/s there, for a new-key write or a read (it times nothing else)."""
    c = ceiling_cell(ceiling, res, workload, depth) if op in ("write", "read") else None
    return (c[f"{op}_gbps"] or None) if c else None


def spread(x: list[float]) -> str:
    """min-max of a cell's rounds, as GB/s."""
    return f"{min(x):.2f}-{max(x):.2f}" if x else "-"


def vs_ceiling(ours: float, best: float, rounds: list[float], ours_passes: list[float]) -> str:
    """Ours over the ceiling's best round (best against best), and the median of ours' passes
    over the ceiling's median round: the best round is usually the pass on the freshest pool,
    which kv_bench never meets (ci/bench-real.sh)."""
    med = ""
    if len(rounds) > 1 and ours_passes:
        med = f"; median {statistics.median(ours_passes) / statistics.median(rounds):.2f}"
    return f"vs ceiling {ours / best:.2f} ({spread(rounds)}{med})"


def depth1_table(d1_runs: list[dict], ceiling: dict | None) -> None:
    d1 = merged(d1_runs)
    print(
        "\nreal engine, one request at a time (--window 1: a KV fetch on a request's critical path); GB/s, "
        f"write = new keys; {machine_load.describe(d1.get('load'))}"
    )
    other_loads(d1_runs, "depth 1")
    peers = [c for c in PEERS if any(r["contender"] == c for r in d1.get("rows", []))]
    cols = ["real default"] + [peer_label(c) for c in peers] + (["ceiling"] if ceiling else [])
    tail = "   " + ", ".join(
        [f"default / {peer_short(c)} (median of the passes' ratios)" for c in peers]
        + (
            ["default / ceiling's best round (its rounds; median of ours' passes / its median round)"]
            if ceiling
            else []
        )
    )
    print(f"{'workload':<9} {'op':<9} " + " ".join(f"{c:>12}" for c in cols) + tail)
    for w in [w["name"] for w in d1.get("workloads", [])]:
        for op in ("write", "read"):
            ours = gbps(d1, "real default", w, op)
            vals = [ours]
            rat = []
            for c in peers:
                vals.append(gbps(d1, c, w, op))
                r = vs_peer(d1_runs, c, w, op)
                if r:
                    rat.append(r)
            if ceiling:
                c = ceiling_gbps(ceiling, d1, w, op, "1")
                vals.append(c)
                if ours and c:
                    rounds = (ceiling_cell(ceiling, d1, w, "1") or {}).get(f"{op}_rounds_gbps", [])
                    rat.append(vs_ceiling(ours, c, rounds, list(pass_map(d1, "real default", w, op).values())))
            if any(v is not None for v in vals):
                print(f"{w:<9} {op:<9} " + " ".join(f"{fmt(v):>12}" for v in vals) + "   " + ", ".join(rat))


def main(argv: list[str]) -> int:
    depth1 = ceiling = None
    rest = []
    it = iter(argv)
    for arg in it:
        if arg in ("--depth1", "--ceiling"):
            val = next(it, None)
            if val is None:
                print(f"{arg} needs a value")
                return 2
            if arg == "--depth1":  # DIR[,MORE...], as the real runs below
                depth1 = [load(Path(d)) for d in val.split(",") if d]
            else:
                ceiling = json.loads(Path(val).read_text())
        else:
            rest.append(arg)
    argv = rest
    if not argv:
        print(__doc__)
        return 2
    sim = load(Path(argv[0]))
    real = interleaved = None
    runs: list[dict] = []
    if len(argv) > 1:
        # REAL_RESULTS_DIR[,MORE...]: runs on the same engine (e.g. one with pil4dfs preloaded,
        # one of ours against the reference plugin), their rows merged; the first one's settings,
        # load and rows describe the real columns. Pass-by-pass ratios pair only contenders of
        # one run (interleaved in its passes): vs_peer takes both sides from the peer's run.
        runs = [load(Path(d)) for d in argv[1].split(",") if d]
        interleaved = runs[0]
        real = merged(runs)
    srcs = [("real", "real", real)] if real else []
    srcs += [("sim", "daos", sim)]
    workloads = [w["name"] for w in sim["workloads"]]
    wreal, wsim = sizes(real), sizes(sim)
    print("\nGB/s through NIXL, one request per key; write = new keys (the headline), overwrite = the same keys again")
    if real:
        print(
            f"real = a real DAOS 2.8 engine ({real['args'].get('scale')}x scale), sim = daos-sim with no modeled cost "
            f"({sim['args'].get('scale')}x), POSIX = the best NIXL POSIX contender on tmpfs "
            f"({sim['args'].get('scale')}x), real dfuse = NIXL POSIX on a dfuse mount (caching off) of a POSIX "
            "container on the same engine, real pil4dfs = the same with libpil4dfs.so intercepting, real cpp = the "
            "reference C++ plugin (gluesys/nixl-daos) and real dfs = NIXL PR #2261's libdfs backend, both built by "
            "bench/reference.sh, on the same pool; ours / a peer takes ours from the run that peer ran in"
        )
    else:
        print("no real DAOS engine in this run (ci/bench.sh uses one when ../shared/daos or DAOS_POOL is there)")
    for label, _, res in srcs:
        print(f"{label}: {machine_load.describe(res.get('load'))}")
    other_loads(runs, "real")
    # The peers on the same engine (NIXL POSIX through DAOS's POSIX layers, the reference plugin),
    # where the runs have them.
    fs = [
        (c, peer_label(c)) for c in PEERS if real is not None and any(r["contender"] == c for r in real.get("rows", []))
    ]
    cpp = next((res.get("cpp_plugin") for res in runs if res.get("cpp_plugin")), None)
    if cpp:
        print(
            f"real cpp: {cpp.get('NIXL_DAOS_THREADS', '64 (its default)')} I/O threads (NIXL_DAOS_THREADS), "
            f"event-queue deadline {cpp.get('NIXL_DAOS_EQ_TIMEOUT', '60')} s, beside ours in runs of their own"
        )
    if ceiling is not None and real is not None:
        print(
            f"real ceiling = bench/ceiling on the same engine (raw libdaos, no NIXL, the plugin's RPCs, "
            f"{ceiling.get('queues')} event queues, window {ceiling.get('window')}, best of {ceiling.get('rounds')} "
            f"rounds in {ceiling.get('passes', 1)} pass(es) around kv_bench's steps; new-key write and read only)"
        )
    ceil = ceiling if real is not None else None
    cols = (
        [f"{s} default" for s, _, _ in srcs]
        + ["POSIX"]
        + [label for _, label in fs]
        + (["real ceiling"] if ceil else [])
    )
    tail = [f"real default / {peer_short(c)}" for c, _ in fs] + (["real default / ceiling"] if ceil else [])
    print(
        f"{'workload':<9} {'op':<9} " + " ".join(f"{c:>12}" for c in cols) + ("   " + ", ".join(tail) if tail else "")
    )
    for w in workloads:
        for op in OPS:
            vals = [gbps(res, f"{prefix} default", w, op) for _, prefix, res in srcs]
            vals.append(best_posix(sim, w, op))
            vals += [gbps(real, c, w, op) for c, _ in fs]
            c_all = ceiling_gbps(ceil, real, w, op, "all")
            if ceil:
                vals.append(c_all)
            rat = []
            rd = gbps(real, "real default", w, op)
            for c, _ in fs:
                r = vs_peer(runs, c, w, op)
                if r:
                    rat.append(r)
            if rd and c_all:
                rat.append(
                    vs_ceiling(
                        rd,
                        c_all,
                        (ceiling_cell(ceil, real, w, "all") or {}).get(f"{op}_rounds_gbps", []),
                        list(pass_map(interleaved, "real default", w, op).values()),
                    )
                )
            if any(v is not None for v in vals):
                print(
                    f"{w:<9} {op:<9} "
                    + " ".join(f"{fmt(v):>12}" for v in vals)
                    + ("   " + ", ".join(rat) if rat else "")
                )
    print(
        "workload sizes (keys x descriptors x block): "
        + "; ".join(
            f"{w}: " + (f"real {wreal.get(w, '-')}, " if real else "") + f"sim/POSIX {wsim.get(w, '-')}"
            for w in workloads
        )
    )
    if depth1 is not None:
        depth1_table(depth1, ceiling)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
