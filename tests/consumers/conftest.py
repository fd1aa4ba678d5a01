# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Environment of the consumers tests, set before the first NIXL agent of the process exists
(NIXL's plugin manager reads NIXL_PLUGIN_DIR once): our plugin installed as libplugin_OBJ.so, the
way consumers that hard-code backend names load it, and the libdaos it runs on.

These tests run with the consumers venv's python (ci/consumers.sh), not the project venv: they
need LMCache and the `nixl` meta-package, which pull torch.

Two modes:
- default: daos-sim (target/release/libdaos_sim.so), pool `sim`, all in this process;
- real engine: NIXL_DAOS_REAL=1 with DAOS_POOL and NIXL_DAOS_LIBDAOS set by the caller (e.g.
  `eval "$(daos-local.sh env)"`); then only test_lmcache_real.py runs, in subprocesses.
"""

import os
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PLUGIN_SO = REPO / "target" / "release" / "libplugin_DAOS.so"
SIM_SO = REPO / "target" / "release" / "libdaos_sim.so"
REAL = os.environ.get("NIXL_DAOS_REAL") == "1"

sys.path.insert(0, str(HERE))

# Read when LMCache is first imported: LMCache logs every store and retrieve at INFO (pytest shows
# what is left when a test fails).
os.environ.setdefault("LMCACHE_LOG_LEVEL", "WARNING")
# LMCache's builtin chunk hash must agree across processes (the real-engine tests' subprocesses).
os.environ.setdefault("PYTHONHASHSEED", "0")

pytest.importorskip("lmcache", reason="LMCache is not installed here: run with the consumers venv (ci/consumers.sh)")

if not PLUGIN_SO.exists():
    pytest.exit(f"{PLUGIN_SO} is missing: run cargo build --release --workspace first", returncode=2)


def _install_as(name: str) -> str:
    """A fresh directory holding our plugin as libplugin_<name>.so, for NIXL_PLUGIN_DIR."""
    d = tempfile.mkdtemp(prefix=f"nixl-daos-as-{name.lower()}-")
    os.symlink(PLUGIN_SO, os.path.join(d, f"libplugin_{name}.so"))
    return d


OBJ_PLUGIN_DIR = _install_as("OBJ")
DAOS_PLUGIN_DIR = _install_as("DAOS")

os.environ["NIXL_PLUGIN_DIR"] = OBJ_PLUGIN_DIR
if REAL:
    missing = [v for v in ("DAOS_POOL", "NIXL_DAOS_LIBDAOS") if not os.environ.get(v)]
    if missing:
        pytest.exit(f'NIXL_DAOS_REAL=1 needs {" and ".join(missing)} (eval "$(daos-local.sh env)")', returncode=2)
else:
    os.environ["NIXL_DAOS_LIBDAOS"] = str(SIM_SO)
    # S3 consumers pass only `bucket`: the pool comes from DAOS_POOL, as in production.
    os.environ["DAOS_POOL"] = "sim"
    os.environ.pop("DAOS_CONT", None)


def pytest_collection_modifyitems(config, items):
    skip_sim = pytest.mark.skip(reason="daos-sim test (NIXL_DAOS_REAL=1 runs only the real-engine tests)")
    skip_real = pytest.mark.skip(
        reason="needs a real DAOS engine: set NIXL_DAOS_REAL=1, DAOS_POOL and NIXL_DAOS_LIBDAOS"
    )
    for item in items:
        real_test = "real_engine" in item.keywords
        if REAL and not real_test:
            item.add_marker(skip_sim)
        elif not REAL and real_test:
            item.add_marker(skip_real)


def pytest_configure(config):
    config.addinivalue_line("markers", "real_engine: runs only against a real DAOS engine (NIXL_DAOS_REAL=1)")
