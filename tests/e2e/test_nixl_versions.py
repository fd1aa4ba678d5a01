# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin in other NIXL releases than the project's venv (1.5.1): NIXL 1.0.0 has the same
engine ABI and works; 0.10.1 predates the prepMemView slots, so the plugin must refuse to load
with a line naming the supported range, instead of failing registerMem with a bare status.

The wheels are installed by ci/setup.sh under .cache/nixl-wheels/<version> (pip --target,
--no-deps); a version not installed there is skipped."""

import json
import os
import shutil
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


def fake_release(tmp_path: Path, version: str) -> Path:
    """This venv's NIXL 1.5.1 presented as another release: its package and libraries beside a
    dist-info that names `version` (what the plugin reads to know its host's release)."""
    import nixl_cu12

    real = Path(nixl_cu12.__file__).resolve().parent.parent
    site = tmp_path / "site"
    site.mkdir()
    # A real copy of the package (the loader reaches the libraries through it, ../), links to
    # the libraries.
    shutil.copytree(real / "nixl_cu12", site / "nixl_cu12")
    for d in ("nixl_cu12.libs", ".nixl_cu12.mesonpy.libs"):
        (site / d).symlink_to(real / d)
    info = site / f"nixl_cu12-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.4\nName: nixl-cu12\nVersion: {version}\n")
    return site


def probe_at(site: Path, **env: str):
    e = dict(os.environ, PYTHONPATH=str(site), **env)
    p = subprocess.run(
        [sys.executable, str(PROBE), str(daoskit.PLUGIN_SO)], capture_output=True, text=True, timeout=60, env=e
    )
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


@pytest.mark.skipif(daoskit.TESTBED, reason="writes to daos-sim's pool")
def test_a_nixl_past_the_tested_range_is_refused_unless_allowed(nixl_env, tmp_path):
    site = fake_release(tmp_path, "1.6.0")
    out, stderr = probe_at(site)
    assert out["nixl"].startswith(str(site)), out
    # NIXL 1.5.1 lists a plugin file it found, and fails create_backend of one that did not load.
    assert "error" in out and "WRITE" not in out, out
    assert "this is NIXL 1.6.0" in stderr and "NIXL 1.0.0 to 1.5.x" in stderr, stderr[-3000:]
    assert "NIXL_DAOS_ALLOW_UNTESTED_NIXL=1" in stderr, stderr[-3000:]
    # The override: loads, says so, and (the ABI being 1.5.1's here) moves data.
    out, stderr = probe_at(site, NIXL_DAOS_ALLOW_UNTESTED_NIXL="1")
    assert out["plugins"] == ["DAOS"] and out["same"], out
    assert "past the tested NIXL 1.0.0 to 1.5.x" in stderr, stderr[-3000:]
    # The release it was built for, presented the same way, loads without a word.
    (tmp_path / "b").mkdir()
    out, stderr = probe_at(fake_release(tmp_path / "b", "1.5.1"))
    assert out["plugins"] == ["DAOS"] and out["same"], out
    assert "NIXL 1.0.0 to 1.5.x" not in stderr, stderr[-3000:]
