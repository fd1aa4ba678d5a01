# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""What keeps an LMCache process alive: LMCache with `nixl_backend: DAOS` fails its allow-list
assertion and the process never exits. Nothing of ours is involved: the assertion fires before
any NIXL agent exists, our plugin is never loaded, and the one non-daemon thread left is LMCache's
own `storage-manager-event-loop` (StorageManager starts it, then creating the backends raises, and
nobody stops it). upstream/lmcache/ has the fix for LMCache. And a process that ran LMCache on our
plugin and destroyed its engine exits by itself: our progress threads do not hold it.

Each case runs in a subprocess that reports and then leaves with os._exit, so a hang in
LMCache cannot hang the test."""

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import conftest

HERE = Path(__file__).resolve().parent

THREADS = """
import glob, threading
def report(**kw):
    kw["non_daemon_threads"] = sorted(t.name for t in threading.enumerate()
                                      if not t.daemon and t is not threading.main_thread())
    kw["plugin_loaded"] = any("libplugin_" in line for line in open("/proc/self/maps"))
    print(json.dumps(kw), flush=True)
"""

DAOS_NAME = (
    textwrap.dedent(
        """
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    import lmc
    from lmcache.v1.config import LMCacheEngineConfig
    """
    )
    + THREADS
    + textwrap.dedent(
        """
    plain = LMCacheEngineConfig.from_defaults
    def daos_named(**kw):
        kw["extra_config"]["nixl_backend"] = "DAOS"
        return plain(**kw)
    LMCacheEngineConfig.from_defaults = daos_named
    try:
        lmc.build(lmc.Setup(bucket=sys.argv[2]))
        report(error=None)
    except AssertionError as e:
        report(error=str(e))
    os._exit(0)
    """
    )
)

OBJ_THEN_EXIT = (
    textwrap.dedent(
        """
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    import lmc
    """
    )
    + THREADS
    + textwrap.dedent(
        """
    setup = lmc.Setup(bucket=sys.argv[2])
    iid, engine = lmc.build(setup)
    toks = lmc.tokens_for(7, 2 * setup.chunk)
    lmc.store(engine, setup, toks)
    hit = engine.lookup(toks)
    lmc.destroy(iid)
    report(hit=hit)
    # and now return from the script: the interpreter must exit by itself
    """
    )
)


def run(script: str, plugin_dir: str) -> dict:
    env = dict(os.environ, NIXL_PLUGIN_DIR=plugin_dir)
    p = subprocess.run(
        [sys.executable, "-c", script, str(HERE), f"lmc-exit-{uuid.uuid4().hex[:8]}"],
        capture_output=True,
        text=True,
        timeout=120,  # a hang past the script's end shows up here as TimeoutExpired
        env=env,
    )
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads([line for line in p.stdout.splitlines() if line.startswith("{")][-1])


def test_with_backend_name_daos_lmcache_asserts_before_loading_us():
    out = run(DAOS_NAME, conftest.DAOS_PLUGIN_DIR)
    assert out["error"] == "Invalid NIXL backend & device combination", out
    assert out["plugin_loaded"] is False, "our plugin was loaded although LMCache refused the name"
    # What would keep the process alive is LMCache's event-loop thread, nothing else.
    assert out["non_daemon_threads"] == ["storage-manager-event-loop"], out


def test_a_process_that_used_the_plugin_exits_by_itself():
    out = run(OBJ_THEN_EXIT, conftest.OBJ_PLUGIN_DIR)
    assert out["hit"] == 512, out
    assert out["plugin_loaded"] is True, out
    assert out["non_daemon_threads"] == [], out
