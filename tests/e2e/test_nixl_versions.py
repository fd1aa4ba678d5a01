# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin in other NIXL releases than the project's venv (1.5.1): NIXL 1.0.0 has the same
engine ABI and works; 0.10.1 predates the prepMemView slots, so the plugin must refuse to load
with a line naming the supported range, instead of failing registerMem with a bare status.

The wheels are installed by ci/setup.sh under .cache/nixl-wheels/<version> (pip --target,
--no-deps); a version not installed there is skipped."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import daoskit

WHEELS = daoskit.REPO / ".cache" / "nixl-wheels"
PROBE = Path(__file__).resolve().parent / "nixl_version_probe.py"


def run_probe(version):
    site = WHEELS / version
    if not (site / "nixl_cu12").is_dir():
        pytest.skip(f"nixl-cu12 {version} is not installed under {site} (ci/setup.sh installs it)")
    # The old wheels import torch at module load and use it only for tensor arguments: a stub
    # module stands in for it (the venv has no torch).
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{WHEELS / 'torch-stub'}")
    p = subprocess.run(
        [sys.executable, str(PROBE), str(daoskit.PLUGIN_SO)], capture_output=True, text=True, timeout=60, env=env
    )
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["nixl"].startswith(str(site)), f"the probe imported NIXL from {out['nixl']}, not {site}"
    return out, p.stderr


@pytest.mark.skipif(daoskit.TESTBED, reason="writes to daos-sim's pool")
def test_nixl_1_0_0_loads_and_moves_data(nixl_env):
    out, _ = run_probe("1.0.0")
    assert "error" not in out, out
    assert out["plugins"] == ["DAOS"] and out["WRITE"] == "DONE" and out["READ"] == "DONE", out
    assert out["same"], out


def test_nixl_before_1_0_is_refused_with_a_reason(nixl_env):
    out, stderr = run_probe("0.10.1")
    assert "DAOS" not in out.get("plugins", []), out
    assert "this NIXL predates 1.0" in stderr and "NIXL 1.0.0 to 1.5.x" in stderr, stderr[-3000:]
