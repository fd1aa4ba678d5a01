# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Calibrates daos-sim's cost model against a real DAOS engine, then checks it: the fold/nofold
ratios of the issue's four KV layouts on the real engine and on the calibrated daos-sim, side by
side, each within 25% (PASS/MISS).

    eval "$(../shared/daos/daos-local.sh env)"     # or DAOS_POOL + NIXL_DAOS_LIBDAOS of your own
    .venv/bin/python -m bench.calibrate [--rounds 4] [--out DIR] [--strict]

(from the repository root). Exit status: 0 when every run completed, whatever the verdict (a
MISS, a ratio off by more than 25%, is a finding, printed with the machine's load and whether
the run was CONTENDED); 1 when a run failed or there is no real engine; with --strict, 2 on a
MISS.

Four runs of bench/fold_policy.py (new-key writes and reads through NIXL, one request per key,
fold=true and fold=false interleaved, their order alternating by round, a fresh container each;
the fit uses the best of the rounds, the check the median of each round's ratio):

1. **Fit**, on the real engine: six layouts that are NOT the ones checked (32 x 32 x 4 KiB,
   64 x 16 x 16 KiB, 16 x 32 x 64 KiB, 32 x 8 x 256 KiB, 8 x 16 x 512 KiB, 4 x 16 x 2 MiB;
   fold=false sends them as single-extent RPCs of 4 KiB to 2 MiB, fold=true as RPCs of 8-32
   extents). Each key has 8-32 layers, as the checked layouts have 8-64, so the cost of a NIXL
   request (the harness, the agent, the plugin: tens of us of client CPU each here) is spread
   over as many RPCs as there; with one layer per key it would be charged to the RPCs and
   inflate the fit. RPC, bulk-RPC, extent and byte counts are known from the policy (a key's
   layers lie apart in memory, so fold=true sends one RPC of LAYERS extents per key and
   fold=false one RPC per layer; an RPC's data goes by bulk transfer from DAOS_BULK_LIMIT on, so
   the 4 and 16 KiB single-extent RPCs go inline and all others by bulk); a non-negative
   least-squares fit of `seconds = rpcs * rpc_cost + extents * recx_cost + bytes / bandwidth`
   (with --bulk also `+ bulk_rpcs * bulk_cost`), per operation (update, fetch), weighted so
   every layout counts alike, gives daos-sim's figures (`cost update|fetch <rpc_us> <recx_us>
   <gbps> <bulk_us>`, see tests/daos-sim/src/cost.rs). --bulk is off by default: with it the
   fit explained its own layouts a little better, but checked worse (one run: 6 of 8 ratios
   within 25%, the bulk cost of 108 us per update RPC making 64 KiB writes 2.31x where the real
   engine showed 1.48x), so the per-RPC cost averages over inline and bulk RPCs. The real times
   contain what the client spends itself (the harness, NIXL, the plugin), which daos-sim spends
   too: so the fit layouts then run on daos-sim with that first model, and the second, final
   fit is to the real times less what daos-sim took beyond its model at each point.
2. **Check**, on the real engine: the four layouts (10x40x1 MiB, 40x10x1 MiB, 200x8x64 KiB,
   64x64x4 KiB), fold and nofold.
3. **Check**, on daos-sim with the fitted model: the same four.

The fitted model is one serialized resource: on these 2-core machines the client, the engine
and TCP on loopback share the CPUs, so an RPC's costs add up rather than overlap (the fit's
residuals, printed, say how well that holds). Where the work happens is printed too: the
client's CPU seconds (the process's CPU clock, all threads, kernel included) per NIXL request,
per RPC, per extent and per GB, on the real engine and on daos-sim. daos-sim burns no CPU for
its modeled costs: its own work (the plugin's, and its copies in the polling threads) stands in
for the real client's, and the two tables show how far apart they are.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.machine_load import RULE, LoadWatch, describe, verdict

FIT_LAYOUTS = "32x32x4k,64x16x16k,16x32x64k,32x8x256k,8x16x512k,4x16x2m"
CHECK_LAYOUTS = "1m40,1m10,64k,4k"
TOLERANCE = 0.25
OPS = {"WRITE": "update", "READ": "fetch"}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m bench.calibrate",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--rounds", type=int, default=4, help="rounds of each fold_policy run; the best counts")
    ap.add_argument("--fit-layouts", default=FIT_LAYOUTS)
    ap.add_argument("--check-layouts", default=CHECK_LAYOUTS)
    ap.add_argument(
        "--bulk",
        action="store_true",
        help="fit a separate cost for RPCs whose data goes by bulk (off: the per-RPC cost averages over both)",
    )
    ap.add_argument("--model", default=None, help="skip the fit: use this --sim-model string")
    ap.add_argument("--out", type=Path, default=None, help="directory for the JSON of every run and the result")
    ap.add_argument("--strict", action="store_true", help="exit 2 on a MISS (default: a MISS is a finding, exit 0)")
    return ap.parse_args(argv)


def fold_policy(out: Path, layouts: str, rounds: int, real: bool, model: str = "") -> dict:
    """One run of bench/fold_policy.py (fold and nofold), as `python -m bench.fold_policy` from the
    same directory and environment as this one; its JSON."""
    cmd = [sys.executable, "-m", "bench.fold_policy", "--policies", "fold,nofold", "--layouts", layouts]
    cmd += ["--rounds", str(rounds), "--out", str(out)]
    cmd += ["--real"] if real else ["--sim-model", model]
    print(f"\n$ {' '.join(cmd[1:])}", flush=True)
    subprocess.run(cmd, check=True)
    return json.loads((out / "fold_policy.json").read_text())


BULK_LIMIT = 19456  # DAOS_BULK_LIMIT: data + 16 B per iov + 8 B per sgl below this goes inline


def counts(row: dict, policy: str) -> tuple[int, int, int, int]:
    """RPCs, RPCs whose data goes by bulk transfer, extents and bytes of one layout under
    fold=true or fold=false (one iov per extent, as the plugin sends them)."""
    keys, layers, block = row["keys"], row["layers"], row["block"]
    extents = keys * layers
    per_rpc = layers if policy == "fold" else 1  # extents per RPC
    rpcs = extents // per_rpc
    bulk = rpcs if per_rpc * (block + 16) + 8 >= BULK_LIMIT else 0
    return rpcs, bulk, extents, extents * block


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares for a few columns: the best fit over every subset of columns
    (three columns: seven subsets), so no figure comes out negative."""
    best, best_err = np.zeros(a.shape[1]), float("inf")
    for k in range(1, a.shape[1] + 1):
        for cols in itertools.combinations(range(a.shape[1]), k):
            x, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
            if (x < 0).any():
                continue
            full = np.zeros(a.shape[1])
            full[list(cols)] = x
            err = float(np.sum((a @ full - b) ** 2))
            if err < best_err:
                best, best_err = full, err
    return best


def fit(rows: list[dict], with_bulk: bool) -> dict[str, dict]:
    """Per operation: rpc_us, bulk_us (0 unless `with_bulk`), recx_us, gbps and the fit's residuals
    per point."""
    out = {}
    for op, name in OPS.items():
        pts = []
        for row in rows:
            for policy in ("fold", "nofold"):
                rpcs, bulk, extents, nbytes = counts(row, policy)
                pts.append((row["layout"], policy, rpcs, bulk, extents, nbytes, row["seconds"][policy][op]))
        a = np.array([[p[2], p[3] if with_bulk else 0, p[4], p[5]] for p in pts], dtype=float)
        t = np.array([p[6] for p in pts])
        # Relative error: divide each row by its time, so a 20 ms layout counts as much as a 2 s one.
        x = nnls(a / t[:, None], np.ones_like(t))
        pred = a @ x
        out[name] = {
            "rpc_us": x[0] * 1e6,
            "bulk_us": x[1] * 1e6,
            "recx_us": x[2] * 1e6,
            "gbps": (1.0 / x[3] / 1e9) if x[3] > 0 else 0.0,
            "points": [
                {
                    "layout": p[0],
                    "policy": p[1],
                    "rpcs": p[2],
                    "bulk": p[3],
                    "extents": p[4],
                    "seconds": p[6],
                    "model": m,
                }
                for p, m in zip(pts, pred)
            ],
        }
    return out


def own_time_removed(real_rows: list[dict], sim_rows: list[dict], first: dict) -> tuple[list[dict], list[float]]:
    """The real rows with each time less daos-sim's excess over the first fit's model at that
    point (never below a fifth of the real time), and those excesses as fractions of the real
    times."""
    sim = {r["layout"]: r for r in sim_rows}
    pred = {(p["layout"], p["policy"], name): p["model"] for name, v in first.items() for p in v["points"]}
    out, excess = [], []
    for r in real_rows:
        c = json.loads(json.dumps(r))  # a deep copy
        for policy in ("fold", "nofold"):
            for op, name in OPS.items():
                real_t = r["seconds"][policy][op]
                extra = sim[r["layout"]]["seconds"][policy][op] - pred[(r["layout"], policy, name)]
                c["seconds"][policy][op] = max(real_t - extra, 0.2 * real_t)
                excess.append(extra / real_t)
        out.append(c)
    return out, excess


def cpu_fit(rows: list[dict]) -> dict[str, dict[str, float]]:
    """This process's CPU seconds (on a real engine: the client's, all threads, kernel included)
    per NIXL request, per RPC, per extent and per GB, per operation: where the work happens."""
    out = {}
    for op, name in OPS.items():
        a, t = [], []
        for row in rows:
            for policy in ("fold", "nofold"):
                rpcs, _, extents, nbytes = counts(row, policy)
                a.append((row["keys"], rpcs, extents, nbytes))
                t.append(row["cpu_seconds"][policy][op])
        a, t = np.array(a, dtype=float), np.array(t)
        x = nnls(a / t[:, None], np.ones_like(t))
        out[name] = {"request_us": x[0] * 1e6, "rpc_us": x[1] * 1e6, "extent_us": x[2] * 1e6, "s_per_gb": x[3] * 1e9}
    return out


def print_cpu(title: str, f: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'op':<8}{'per request us':>16}{'per RPC us':>12}{'per extent us':>15}{'CPU s per GB':>14}")
    for op, v in f.items():
        print(f"{op:<8}{v['request_us']:>16.1f}{v['rpc_us']:>12.1f}{v['extent_us']:>15.1f}{v['s_per_gb']:>14.3f}")


def model_string(f: dict[str, dict]) -> str:
    return "; ".join(
        f"cost {op} {v['rpc_us']:.2f} {v['recx_us']:.2f} {v['gbps']:.6g} {v['bulk_us']:.2f}" for op, v in f.items()
    )


def ratios(run: dict) -> dict[str, dict[str, float]]:
    """fold / nofold throughput per layout and op: the median over rounds of each round's ratio.
    The two policies of one round ran next to each other, so a load that comes and goes on a
    shared machine slows both alike, where the best of each over all rounds could pair a quiet
    moment of one with a loaded moment of the other."""
    return {layout: {op: float(np.median(v)) for op, v in ops.items()} for layout, ops in round_ratios(run).items()}


def round_ratios(run: dict) -> dict[str, dict[str, list[float]]]:
    """Every round's fold / nofold throughput ratio, per layout and op."""
    return {
        r["layout"]: {
            op: [n / f for f, n in zip(r["round_seconds"]["fold"][op], r["round_seconds"]["nofold"][op])] for op in OPS
        }
        for r in run["rows"]
    }


def main() -> int:
    a = parse_args()
    if not (os.environ.get("DAOS_POOL") and os.environ.get("NIXL_DAOS_LIBDAOS")):
        print('calibrate.py needs a real engine: DAOS_POOL and NIXL_DAOS_LIBDAOS (`eval "$(daos-local.sh env)"`)')
        return 1
    load = LoadWatch()
    try:
        return calibrate(a, load)
    except subprocess.CalledProcessError as e:
        print(f"calibrate.py: a run failed: {' '.join(e.cmd[1:])}: exit {e.returncode}", file=sys.stderr)
        return 1


def calibrate(a, load: LoadWatch) -> int:
    out = a.out or Path("results") / time.strftime("%Y%m%d-%H%M%S") / "calibrate"
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    fitted = fit_run = None
    if a.model is None:
        fit_run = fold_policy(out / "fit-real", a.fit_layouts, a.rounds, real=True)
        first = fit(fit_run["rows"], a.bulk)
        # daos-sim spends time of its own (the harness, NIXL, the plugin, its copies) that the
        # real times already contain: run the fit layouts on daos-sim with the first fit, and fit
        # again to the real times less what daos-sim took beyond its model.
        sim_fit = fold_policy(out / "fit-sim", a.fit_layouts, a.rounds, real=False, model=model_string(first))
        corrected, excess = own_time_removed(fit_run["rows"], sim_fit["rows"], first)
        fitted = fit(corrected, a.bulk)
        model = model_string(fitted)
        print(
            f"\nfirst fit: {model_string(first)}; daos-sim's own time beyond that model on the fit layouts: "
            f"median {np.median(excess):.0%} of the real time (range {min(excess):.0%} to {max(excess):.0%}), "
            "taken off the real times for the second fit"
        )
        bulk_term = " + bulk_rpcs * bulk_cost" if a.bulk else ""
        print(f"\nfit (real engine): seconds = rpcs * rpc_cost{bulk_term} + extents * recx_cost + bytes / bandwidth")
        print(f"{'op':<8}{'rpc_cost us':>13}{'bulk_cost us':>14}{'recx_cost us':>14}{'GB/s':>8}")
        for op, v in fitted.items():
            print(f"{op:<8}{v['rpc_us']:>13.1f}{v['bulk_us']:>14.1f}{v['recx_us']:>14.1f}{v['gbps']:>8.3f}")
        print(
            f"\n{'layout':<14}{'policy':<8}{'op':<7}{'RPCs':>7}{'bulk':>6}{'extents':>9}"
            f"{'real s':>9}{'model s':>9}{'model/real':>12}"
        )
        for op, v in fitted.items():
            for p in v["points"]:
                print(
                    f"{p['layout']:<14}{p['policy']:<8}{op:<7}{p['rpcs']:>7}{p['bulk']:>6}{p['extents']:>9}"
                    f"{p['seconds']:>9.4f}{p['model']:>9.4f}{p['model'] / p['seconds']:>12.2f}"
                )
    else:
        model = a.model
    print(f"\ndaos-sim model: {model}")

    real = fold_policy(out / "check-real", a.check_layouts, a.rounds, real=True)
    sim = fold_policy(out / "check-sim", a.check_layouts, a.rounds, real=False, model=model)
    rr, rs, spread = ratios(real), ratios(sim), round_ratios(real)
    for row in sim["rows"]:  # the RPC counts the fit assumed, against daos-sim's counters
        for policy in ("fold", "nofold"):
            want = counts(row, policy)[0]
            for op in OPS:
                got = row["rpcs"][policy][op]
                if got != want:
                    print(
                        f"warning: {row['layout']} {policy} {op}: daos-sim counted {got} RPCs, the fit assumes {want}"
                    )
    cpu = {"real": cpu_fit(real["rows"] + (fit_run["rows"] if fitted else [])), "sim": cpu_fit(sim["rows"])}
    print_cpu(
        "client CPU on the real engine (this process: harness, NIXL, plugin, libdaos, TCP in the kernel)", cpu["real"]
    )
    print_cpu(
        "the same on daos-sim (harness, NIXL, plugin, daos-sim's copies; its modeled costs burn no CPU)", cpu["sim"]
    )

    print(
        f"\nfold / nofold throughput (the median of the rounds' ratios), real engine against calibrated daos-sim "
        f"(same layouts, same run; "
        f"PASS when daos-sim's ratio is within {TOLERANCE:.0%} of the real one)"
    )
    print(f"{'layout':<10}{'op':<7}{'real':>8}{'real rounds':>14}{'daos-sim':>10}{'sim/real':>10}  verdict")
    rows, worst = [], 0.0
    for layout in rr:
        for op in OPS:
            q = rs[layout][op] / rr[layout][op]
            off = abs(q - 1.0)
            worst = max(worst, off)
            ok = off <= TOLERANCE
            rows.append({"layout": layout, "op": op, "real": rr[layout][op], "sim": rs[layout][op], "ok": ok})
            print(
                f"{layout:<10}{op:<7}{rr[layout][op]:>8.2f}"
                f"{min(spread[layout][op]):>8.2f}-{max(spread[layout][op]):<5.2f}{rs[layout][op]:>10.2f}{q:>10.2f}"
                f"  {'PASS' if ok else 'MISS'}"
            )
    passed = sum(r["ok"] for r in rows)
    rec = load.stop()
    print(f"\n{describe(rec)}")
    print(
        f"calibration: {passed} of {len(rows)} within {TOLERANCE:.0%} (worst {worst:.0%} off) "
        f"-> {'PASS' if passed == len(rows) else 'MISS' if a.strict else 'MISS (a finding, not a failure)'}; "
        f"{time.perf_counter() - t0:.0f} s; this run: {verdict(rec)}; {RULE}"
    )
    (out / "calibration.json").write_text(
        json.dumps(
            {
                "model": model,
                "fit": fitted,
                "cpu": cpu,
                "ratios": rows,
                "tolerance": TOLERANCE,
                "worst_off": worst,
                "load": rec,
            },
            indent=1,
        )
    )
    return 2 if a.strict and passed < len(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
