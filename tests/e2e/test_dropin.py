# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The drop-in path docs/consumers.md gives for consumers that hard-code backend names (KVBM asks for
"OBJ", LMCache checks an allow-list): the plugin installed as libplugin_OBJ.so answers to "OBJ"
and takes S3-style parameters it does not know. In a subprocess, because NIXL's plugin manager
reads NIXL_PLUGIN_DIR once per process."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import daoskit

HERE = Path(__file__).resolve().parent

SCRIPT = HERE / "dropin_consumer.py"


def test_installed_as_obj_it_serves_obj_consumers(nixl_env):
    plugin_dir = tempfile.mkdtemp(prefix="nixl-daos-as-obj-")
    os.symlink(daoskit.PLUGIN_SO, os.path.join(plugin_dir, "libplugin_OBJ.so"))
    env = dict(os.environ, NIXL_PLUGIN_DIR=plugin_dir, NIXL_LOG_LEVEL="INFO")
    p = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["plugins"] == ["OBJ"] and out["backend"] == "OBJ", out
    assert out["same"], "data written and read back through the name OBJ differ"
    assert out["query"] == [{"size": str(1 << 16)}], out
    assert 'container "kvbm-dropin" from the S3 parameter bucket' in p.stderr, p.stderr[-2000:]
    assert "creating container" in p.stderr and "kvbm-dropin" in p.stderr, p.stderr[-2000:]
    assert p.stderr.count('unknown parameters "endpoint_override", "region"') == 1, p.stderr[-2000:]


ROUND_TRIP = """
import numpy as np
from nixl_cu12._api import nixl_agent, nixl_agent_config
a = nixl_agent("installed", nixl_agent_config(backends=[]))
a.create_backend("DAOS", {})  # DAOS_POOL and DAOS_CONT: daos-sim's, or the real pass's
a.create_backend("POSIX", {})
data, back = np.arange(1 << 16, dtype=np.uint8), np.zeros(1 << 16, dtype=np.uint8)
a.register_memory([(data.ctypes.data, data.nbytes, 0, ""), (back.ctypes.data, back.nbytes, 0, "")], "DRAM")
a.register_memory([(0, data.nbytes, 0, "installed-key")], "OBJ", backends=["DAOS"])
for op, buf in (("WRITE", data), ("READ", back)):
    h = a.initialize_xfer(op, a.get_xfer_descs([(buf.ctypes.data, buf.nbytes, 0)], "DRAM"),
                          a.get_xfer_descs([(0, buf.nbytes, 0)], "OBJ"), a.name, backends=["DAOS"])
    state = a.transfer(h)
    while state == "PROC":
        state = a.check_xfer_state(h)
    assert state == "DONE", state
print("same" if (data == back).all() else "differ")
"""


def test_installed_beside_nixls_own_plugins(nixl_env, tmp_path):
    """ci/install-plugin.sh into a copy of this venv's NIXL 1.5.1: with NIXL_PLUGIN_DIR unset,
    NIXL lists DAOS beside UCX and POSIX, creates both backends, and a transfer round-trips."""
    import nixl_cu12

    real = Path(nixl_cu12.__file__).resolve().parent.parent
    site = tmp_path / "site"
    site.mkdir()
    shutil.copytree(real / "nixl_cu12", site / "nixl_cu12")
    shutil.copytree(real / ".nixl_cu12.mesonpy.libs", site / ".nixl_cu12.mesonpy.libs", symlinks=True)
    (site / "nixl_cu12.libs").symlink_to(real / "nixl_cu12.libs")
    env = {k: v for k, v in os.environ.items() if k != "NIXL_PLUGIN_DIR"}
    env["PYTHONPATH"] = str(site)
    p = subprocess.run(
        ["bash", str(daoskit.REPO / "ci" / "install-plugin.sh"), sys.executable],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert (site / ".nixl_cu12.mesonpy.libs" / "plugins" / "libplugin_DAOS.so").is_file()
    listed = next(line for line in p.stdout.splitlines() if line.startswith("NIXL lists:"))
    assert all(n in listed for n in ("DAOS", "UCX", "POSIX")), listed
    p = subprocess.run([sys.executable, "-c", ROUND_TRIP], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert p.stdout.strip().splitlines()[-1] == "same", p.stdout
