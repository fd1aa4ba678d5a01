# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The closing summary of ci/bench.sh: the machine's load during each run of one benchmark
(bench/machine_load.py) and the run's findings, one line each: MISSed targets, CONTENDED runs,
the calibration's ratios that were off, contenders that could not run here, a machine whose speed
drifted. Findings are verdicts of a run that ran and verified its bytes: they do not fail it.
The failures the runs recorded (a wrong read-back, an aborted run, a DAOS contender that could
not run) are listed after them; ci/bench.sh fails on those through the runs' exit status.

    .venv/bin/python -m bench.summary RESULTS_DIR [NOTE ...]

RESULTS_DIR is ci/bench.sh's results/<timestamp> (sim/, real/: kv_bench; calibrate/:
calibrate.py and its fold_policy runs; evict-sim/, evict-real/: evict_bench); each NOTE is a
finding of ci/bench.sh itself (a step it skipped). Exit status 0, or 1 when RESULTS_DIR is
missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench import machine_load


def read(p: Path) -> dict | None:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_dir():
        print(__doc__)
        return 1
    d = Path(argv[0])
    findings = list(argv[1:])
    failures: list[str] = []
    runs: list[tuple[str, dict | None]] = []
    for sub, label in (
        ("sim", "kv_bench (daos-sim)"),
        ("real", "kv_bench (real DAOS)"),
        ("real-depth1", "kv_bench (real DAOS, depth 1)"),
        ("real-pil4dfs", "kv_bench (real DAOS, pil4dfs)"),
        ("real-peers", "kv_bench (real DAOS, other DAOS plugins)"),
        ("real-peers-depth1", "kv_bench (real DAOS, other DAOS plugins, depth 1)"),
    ):
        res = read(d / sub / "results.json")
        if res is None:
            continue
        runs.append((label, res.get("load")))
        for t in res.get("targets", []):
            if t["result"] == "MISS":
                findings.append(f"{label}: MISS {t['target']}: {t['detail']}")
        failures += [f"{label}: {f}" for f in res.get("failures", [])]
        for r in res.get("rows", []):
            # A contender with a failure (could not run, wrong bytes) is listed there, not here.
            failed = any(f.startswith((f"{r['contender']}:", f"{r['contender']} ")) for f in res.get("failures", []))
            if r.get("note", "").startswith("unavailable") and not failed:
                findings.append(f"{label}: {r['contender']} could not run here ({r['note']})")
        pol = res.get("policies") or {}
        for c in pol.get("cells", []):
            if c["verdict"] == "behind":
                findings.append(
                    f"{label}: the default policy is behind {c['vs']} at {c['workload']} {c['op']} in every "
                    f"pass ({c['median']:.2f}, median of passes; beyond the square of the A/A band {pol['band']:.2f}, "
                    "the largest median ratio of the same RPCs under every policy)"
                )
        if res.get("drift"):
            findings.append(f"{label}: NOISY, memcpy drifted during the run: {'; '.join(res['drift'])}")
    cal = read(d / "calibrate" / "calibration.json")
    if cal is not None:
        runs.append(("calibrate", cal.get("load")))
        for fp in sorted((d / "calibrate").glob("*/fold_policy.json")):
            runs.append((f"  fold_policy {fp.parent.name}", (read(fp) or {}).get("load")))
        rows, tol = cal["ratios"], cal["tolerance"]
        off = [r for r in rows if not r["ok"]]
        if off:
            worst = max(rows, key=lambda r: abs(r["sim"] / r["real"] - 1))
            findings.append(
                f"calibration: {len(rows) - len(off)} of {len(rows)} fold/nofold ratios within {tol:.0%} (MISS); "
                f"worst {worst['layout']} {worst['op']}: daos-sim {worst['sim']:.2f} against real {worst['real']:.2f}, "
                f"{abs(worst['sim'] / worst['real'] - 1):.0%} off"
            )
    for sub, label in (("evict-sim", "evict_bench (daos-sim)"), ("evict-real", "evict_bench (real DAOS)")):
        ev = read(d / sub / "evict.json")
        if ev is not None:
            runs.append((label, ev.get("load")))

    print(f"\nmachine load of each run ({machine_load.RULE}):")
    for label, load in runs:
        print(f"  {label}: {machine_load.describe(load)}")
        if load and load["contended"]:
            findings.append(f"{label.strip()}: {machine_load.verdict(load)}")
    if not runs:
        print("  (no results)")
    print(f"\nfindings ({len(findings)}; verdicts of runs that ran and verified their reads, not failures):")
    for f in findings:
        print(f"  - {f}")
    if not findings:
        print("  none: every target met, no run contended")
    if failures:
        print(f"\nfailures recorded in the results ({len(failures)}):")
        for f in failures:
            print(f"  FAIL {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
