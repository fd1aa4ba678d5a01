# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The closing summary of ci/bench.sh: the machine's load during each run of one benchmark
(bench/machine_load.py) and the run's findings, one line each: MISSed targets, CONTENDED runs,
contenders that could not run here, a machine whose speed drifted. Findings are verdicts of a
run that ran and verified its bytes: they do not fail it. The failures the runs recorded (a
wrong read-back, an aborted run, a DAOS contender that could not run) are listed after them;
ci/bench.sh fails on those through the runs' exit status.

    .venv/bin/python -m bench.summary RESULTS_DIR [NOTE ...]

RESULTS_DIR is ci/bench.sh's results/<timestamp> (sim/, real/, real-*/: kv_bench; evict-sim/,
evict-real/: evict_bench); each NOTE is a finding of ci/bench.sh itself (a step it skipped).
Exit status 0, or 1 when RESULTS_DIR is missing.
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
        if res.get("drift"):
            findings.append(f"{label}: NOISY, memcpy drifted during the run: {'; '.join(res['drift'])}")
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
