# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Bounded growth: RSS and thread count stay flat across 1,000 queryMem calls that hit their
deadline under a hang (then resume), and across 1,000 agent create/destroy cycles. In a
subprocess, so that the figures are this workload's alone."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import daoskit

# It drives daos-sim's hang/resume controls and reads its in-flight counter.
pytestmark = pytest.mark.skipif(daoskit.TESTBED, reason="needs daos-sim's controls and counters")

HERE = Path(__file__).resolve().parent

SCRIPT = HERE / "growth_workload.py"


def test_rss_and_threads_stay_flat():
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"growth: {out}")
    (r0, t0), (r1, t1) = out["agents"]
    assert t1 == t0, f"threads {t0} -> {t1} over 1,000 agent create/destroy cycles"
    assert r1 - r0 < 16 * 1024, f"RSS +{(r1 - r0) // 1024} MiB over 1,000 agent create/destroy cycles"
    assert "DER_BUSY" not in proc.stderr, "an engine closed its container with a child still open"
    (r0, t0, i0), (r1, t1, i1) = out["queries"]
    assert out["timeouts"] >= 1000, out  # the hang did hold every call to its deadline
    assert i0 == 0 and i1 == 0, f"queries left inside DAOS after resume: {i0}, {i1}"
    assert t1 == t0, f"threads {t0} -> {t1} over 1,000 hung queryMem calls"
    assert r1 - r0 < 16 * 1024, f"RSS +{(r1 - r0) // 1024} MiB over 1,000 hung queryMem calls"
