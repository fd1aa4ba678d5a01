# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The drop-in path docs/consumers.md gives for consumers that hard-code backend names (KVBM asks for
"OBJ", LMCache checks an allow-list): the plugin installed as libplugin_OBJ.so answers to "OBJ"
and takes S3-style parameters it does not know. In a subprocess, because NIXL's plugin manager
reads NIXL_PLUGIN_DIR once per process."""

import json
import os
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
