# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Report of bench/kv_bench.py: the table, the ratios to memcpy and to the best POSIX, the
PASS/MISS line of each target, and the results folder (results.json, results.csv, plot.png)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from bench import machine_load

# "write": to new keys (the headline write); "overwrite": the same keys again
XFER_OPS = ("write", "overwrite", "read")

# (label, workload, op, contender, reference, minimum ratio); reference "memcpy-nt" is memcpy
# with one thread per core, "posix" the best POSIX contender of the same workload and op, and
# any other name that contender's row of the same workload and op.
RATIO_TARGETS = [
    ("ref read >= 0.7x per-core memcpy", "ref", "read", "daos default", "memcpy-nt", 0.7),
    ("ref read >= 2x best POSIX", "ref", "read", "daos default", "posix", 2.0),
    ("ref overwrite >= 0.7x per-core memcpy", "ref", "overwrite", "daos default", "memcpy-nt", 0.7),
    ("ref overwrite >= 2x best POSIX", "ref", "overwrite", "daos default", "posix", 2.0),
    ("small read >= 0.5x per-core memcpy", "small", "read", "daos default", "memcpy-nt", 0.5),
    ("small read >= 2x best POSIX", "small", "read", "daos default", "posix", 2.0),
    ("small overwrite >= 0.5x per-core memcpy", "small", "overwrite", "daos default", "memcpy-nt", 0.5),
    ("small overwrite >= 2x best POSIX", "small", "overwrite", "daos default", "posix", 2.0),
]
# The contenders whose RPCs daos-sim counts (every rep checked against RPC_COUNT_TARGET).
RPC_CONTENDERS = ("daos default", "daos default +net")


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


class Lookup:
    def __init__(self, rows):
        self.rows = [r for r in rows if r.times]

    def get(self, contender: str, workload: str, op: str):
        for r in self.rows:
            if r.contender == contender and r.workload == workload and r.op == op:
                return r
        return None

    def memcpy(self, workload: str, per_core: bool):
        """The memcpy reference: of its runs at the start and at the end, the faster."""
        ms = [r for r in self.rows if r.contender.startswith("memcpy") and r.workload == workload]
        ms = [r for r in ms if r.contender.startswith("memcpy 1T") != per_core]
        return max(ms, key=lambda r: r.gbps) if ms else None

    def best_posix(self, workload: str, op: str):
        ps = [r for r in self.rows if r.contender.startswith("posix") and r.workload == workload and r.op == op]
        return max(ps, key=lambda r: r.gbps) if ps else None

    def reference(self, ref: str, workload: str, op: str):
        if ref == "memcpy-nt":
            return self.memcpy(workload, True)
        if ref == "posix":
            return self.best_posix(workload, op)
        return self.get(ref, workload, op)


def print_table(rows) -> None:
    head = (
        f"{'contender':<18} {'workload':<8} {'op':<9} {'GB/s':>7} {'reps GB/s':>11} {'desc/s':>10} {'RPCs':>7} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'CPU s/GB':>8} {'reps':>4}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if not r.times:
            print(f"{r.contender:<18} {r.workload:<8} {r.op:<9} {r.note}")
            continue
        gbps = _fmt(r.gbps, ".2f") if r.nbytes else "-"
        lo_hi = r.gbps_range
        spread = f"{lo_hi[0]:.2f}-{lo_hi[1]:.2f}" if lo_hi else "-"
        rpcs = str(int(sorted(r.rpcs)[len(r.rpcs) // 2])) if r.rpcs else "-"
        p50 = r.pct(50)
        p99 = r.pct(99)
        cpu = _fmt(r.cpu_per_gb, ".3f") if r.nbytes else "-"
        mark = "" if r.verified else "  WRONG DATA"
        print(
            f"{r.contender:<18} {r.workload:<8} {r.op:<9} {gbps:>7} {spread:>11} {r.dps:>10.0f} {rpcs:>7} "
            f"{_fmt(p50 and p50 * 1e3, '.2f'):>8} {_fmt(p99 and p99 * 1e3, '.2f'):>8} {cpu:>8} {len(r.times):>4}{mark}"
        )


def ratios(look: Lookup) -> list[dict]:
    out = []
    for r in look.rows:
        if r.op not in XFER_OPS:
            continue
        m1, mn, px = look.memcpy(r.workload, False), look.memcpy(r.workload, True), look.best_posix(r.workload, r.op)
        out.append(
            {
                "contender": r.contender,
                "workload": r.workload,
                "op": r.op,
                "vs_memcpy_1t": r.gbps / m1.gbps if m1 else None,
                "vs_memcpy_per_core": r.gbps / mn.gbps if mn else None,
                "vs_best_posix": r.gbps / px.gbps if px else None,
                "best_posix": px.contender if px else None,
            }
        )
    return out


def print_ratios(rs: list[dict]) -> None:
    print(f"\n{'contender':<18} {'workload':<8} {'op':<9} {'/memcpy 1T':>10} {'/memcpy/core':>12} {'/best POSIX':>11}")
    for x in rs:
        print(
            f"{x['contender']:<18} {x['workload']:<8} {x['op']:<9} {_fmt(x['vs_memcpy_1t'], '.2f'):>10} "
            f"{_fmt(x['vs_memcpy_per_core'], '.2f'):>12} {_fmt(x['vs_best_posix'], '.2f'):>11}"
        )


def net_check(look: Lookup, net: dict) -> list[dict]:
    """Each +net transfer against the link's lower bound by the model (RPCs x rpc_cost + bytes /
    link): near 1.0 the modeled network is the bottleneck, as intended; well below, something
    local (copy, plugin, harness) is."""
    out = []
    gbps, cost = net.get("bandwidth_gbps") or 0.0, net.get("rpc_cost_us") or 0.0
    if not gbps:
        return out
    for r in look.rows:
        if r.contender.endswith("+net") and r.op in XFER_OPS and r.rpcs:
            rpcs = sorted(r.rpcs)[len(r.rpcs) // 2]
            bound = rpcs * cost * 1e-6 + r.nbytes / (gbps * 1e9)
            out.append(
                {
                    "contender": r.contender,
                    "workload": r.workload,
                    "op": r.op,
                    "rpcs": rpcs,
                    "model_s": bound,
                    "measured_s": r.t,
                    "of_model": bound / r.t,
                }
            )
    return out


def print_net_check(rows: list[dict], net: dict) -> None:
    if not rows:
        return
    print(
        f"\n+net against the link model ({net['bandwidth_gbps']:g} GB/s, rpc_cost {net['rpc_cost_us']:g} us, "
        f"latency {net['latency_us']:g} us): 1.00 = bound by the modeled network"
    )
    print(
        f"{'contender':<18} {'workload':<8} {'op':<5} {'RPCs':>6} {'model s':>8} {'measured s':>10} {'model/meas':>10}"
    )
    for x in rows:
        print(
            f"{x['contender']:<18} {x['workload']:<8} {x['op']:<5} {x['rpcs']:>6} {x['model_s']:>8.3f} "
            f"{x['measured_s']:>10.3f} {x['of_model']:>10.2f}"
        )


DRIFT = 0.15
# A run whose threads waited for a CPU this many cores' worth on average shared the machine.
CONTENDED = 0.3


def drift(look: Lookup) -> list[str]:
    """memcpy at the start against memcpy at the end: where they differ by more than DRIFT, the
    machine's speed changed during the run and the ratios of this run are not to be trusted."""
    out = []
    for end in [r for r in look.rows if r.contender.startswith("memcpy") and r.contender.endswith(" (end)")]:
        start = look.get(end.contender[: -len(" (end)")], end.workload, end.op)
        if start and abs(end.gbps / start.gbps - 1) > DRIFT:
            out.append(
                f"{start.contender} {end.workload}: {start.gbps:.2f} GB/s at the start, {end.gbps:.2f} at the end"
            )
    return out


RPC_COUNT_TARGET = "RPCs: exactly one per dkey (chunk) of each key per request"


def rpcs_per_key(key_bytes: int, chunk_bytes: int) -> int:
    """The RPCs the plugin sends for one key: one update or fetch per dkey, i.e. per chunk the key
    has bytes in (chunk_bytes 0: one dkey per key)."""
    return -(-key_bytes // chunk_bytes) if chunk_bytes > 0 else 1


def targets(look: Lookup, keys: dict[str, int]) -> list[dict]:
    """`keys`: the RPCs one request of each workload sends (its keys times their chunks)."""
    out = []
    for label, wl, op, who, ref, minimum in RATIO_TARGETS:
        a, b = look.get(who, wl, op), look.reference(ref, wl, op)
        if a is None or b is None:
            out.append({"target": label, "result": "SKIP", "detail": "not run"})
            continue
        ratio = a.gbps / b.gbps
        result = "PASS" if ratio >= minimum and a.verified else "MISS"
        detail = f"{who} {a.gbps:.2f} GB/s / {b.contender} {b.gbps:.2f} GB/s = {ratio:.2f}x"
        waits = [r.waiting for r in (a, b) if r.waiting is not None]
        if result == "MISS" and waits and max(waits) >= CONTENDED:
            # The clock then compares the CPU each run got (bench/cpu_cost.py): say so, and
            # give the ratio of CPU per byte, which the machine's load hardly moves.
            detail += (
                f" (CONTENDED: threads waited for a CPU, {a.waiting or 0:.2f} cores' worth in {who}, "
                f"{b.waiting or 0:.2f} in {b.contender}; by CPU per byte {b.cpu_per_gb / a.cpu_per_gb:.2f}x)"
            )
        out.append({"target": label, "ratio": ratio, "result": result, "detail": detail})
    counted = [r for r in look.rows if r.contender in RPC_CONTENDERS and r.op in XFER_OPS]
    if counted:
        bad = [
            f"{r.contender} {r.workload} {r.op}: {sorted(set(r.rpcs))} RPCs, {keys[r.workload]} expected"
            for r in counted
            if set(r.rpcs) != {keys[r.workload]}
        ]
        out.append(
            {
                "target": RPC_COUNT_TARGET,
                "result": "MISS" if bad else "PASS",
                "detail": "; ".join(bad) if bad else f"{len(counted)} ops x every repetition: RPCs == keys x chunks",
            }
        )
    else:
        out.append({"target": RPC_COUNT_TARGET, "result": "SKIP", "detail": "not run"})
    return out


def draw_plot(look: Lookup, path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"no plot: {e}"
    xfer = [r for r in look.rows if r.nbytes]
    groups = []
    for r in xfer:
        for op in XFER_OPS if r.op == "copy" else (r.op,):
            if (r.workload, op) not in groups:
                groups.append((r.workload, op))
    groups = [g for g in groups if any(r.op == g[1] for r in xfer if r.workload == g[0])] or groups
    names = list(dict.fromkeys(r.contender for r in xfer))
    query = [r for r in look.rows if r.workload == "query"]
    fig, axes = plt.subplots(
        1,
        2 if query else 1,
        figsize=(16 if query else 12, 6),
        squeeze=False,
        gridspec_kw={"width_ratios": [3, 1]} if query else None,
    )
    ax = axes[0][0]
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        ys, lo, hi = [], [], []
        for wl, op in groups:
            r = look.get(n, wl, op) or look.get(n, wl, "copy")
            y = r.gbps if r else 0.0
            rng = r.gbps_range if r else None
            ys.append(y)
            lo.append(y - rng[0] if rng else 0.0)
            hi.append(rng[1] - y if rng else 0.0)
        # whiskers: the slowest and the fastest rep
        ax.bar([g + i * width for g in range(len(groups))], ys, width, label=n, yerr=[lo, hi], capsize=2)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
    ax.set_xticklabels([f"{wl}\n{op}" for wl, op in groups])
    fastest = any(r.best for r in xfer)
    ax.set_ylabel("GB/s (fastest rep)" if fastest else "GB/s (median)")
    memcpy = any(r.contender.startswith("memcpy") for r in xfer)
    ax.set_title(
        "KV transfers through NIXL"
        + (" (memcpy: the same bytes copied in process)" if memcpy else "")
        + "; whiskers: slowest and fastest rep"
    )
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    if query:
        ax = axes[0][1]
        labels = [f"{r.contender}\n{r.op}" for r in query]
        ax.barh(range(len(query)), [r.dps for r in query])
        ax.set_yticks(range(len(query)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xlabel("keys/s")
        ax.set_title("queryMem")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def report(rows, meta: dict, out: Path, plot: bool = True) -> bool:
    """Prints everything and writes the results folder; True when no target MISSes."""
    look = Lookup(rows)
    print(f"\nhandles: {meta.get('handles', '-')}")
    print(machine_load.describe(meta.get("load")))
    print_table(rows)
    rs = ratios(look)
    print_ratios(rs)
    nc = net_check(look, meta.get("net_model") or {})
    print_net_check(nc, meta.get("net_model") or {})
    # Results from before chunks carry no plugin_params: one dkey per key then.
    chunk = int(meta.get("plugin_params", {}).get("chunk_bytes", "0"))
    ts = targets(
        look, {w["name"]: w["keys"] * rpcs_per_key(w["layers"] * w["block"], chunk) for w in meta["workloads"]}
    )
    print("\ntargets (ratios within this run):")
    for t in ts:
        print(f"  {t['result']:<4} {t['target']}: {t['detail']}")
    for f in meta["failures"]:
        print(f"  FAIL {f}")
    load = meta.get("load")
    if load:
        print(f"  LOAD this run: {machine_load.verdict(load)}; {load['rule']}")
    dr = drift(look)
    if dr:
        print(
            f"  NOISY the machine's speed changed during the run (memcpy differs by > {DRIFT:.0%}; the faster "
            f"is the reference): {'; '.join(dr)}. Rerun before trusting the ratios."
        )

    out.mkdir(parents=True, exist_ok=True)
    records = []
    for r in rows:
        records.append(
            {
                "contender": r.contender,
                "workload": r.workload,
                "op": r.op,
                "bytes": r.nbytes,
                "descriptors": r.descs,
                "reps": len(r.times),
                "seconds": r.times,
                "cpu_seconds": r.cpu,
                "runq_seconds": r.runq,
                "gbps": r.gbps if r.times and r.nbytes else None,
                "gbps_range": list(r.gbps_range) if r.gbps_range else None,
                "passes": sorted(r.passes.items()),
                "descs_per_s": r.dps if r.times else None,
                "rpcs": r.rpcs,
                "p50_ms": (r.pct(50) or 0) * 1e3 if r.lat else None,
                "p99_ms": (r.pct(99) or 0) * 1e3 if r.lat else None,
                "cpu_s_per_gb": r.cpu_per_gb if r.times and r.nbytes else None,
                "verified": r.verified,
                "note": r.note,
            }
        )
    (out / "results.json").write_text(
        json.dumps(
            {
                **meta,
                "rows": records,
                "ratios": rs,
                "net_check": nc,
                "drift": dr,
                "targets": ts,
            },
            indent=1,
        )
    )
    cols = [
        "contender",
        "workload",
        "op",
        "bytes",
        "descriptors",
        "reps",
        "gbps",
        "descs_per_s",
        "p50_ms",
        "p99_ms",
        "cpu_s_per_gb",
        "verified",
        "note",
    ]
    with open(out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, cols + ["rpcs_median", "gbps_slowest_rep", "gbps_fastest_rep"], extrasaction="ignore")
        w.writeheader()
        for rec in records:
            rpcs = sorted(rec["rpcs"])
            lo, hi = rec["gbps_range"] or ("", "")
            w.writerow(
                rec
                | {"rpcs_median": rpcs[len(rpcs) // 2] if rpcs else "", "gbps_slowest_rep": lo, "gbps_fastest_rep": hi}
            )
    why = draw_plot(look, out / "plot.png") if plot else "no plot (--no-plot)"
    if why:
        print(why)
    print(f"\nresults: {out}")
    return not any(t["result"] == "MISS" for t in ts)
