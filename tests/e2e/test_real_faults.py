# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Faults on a real DAOS engine, which daos-sim can only imitate: the engine killed (kill -9)
while transfers and queries are in flight, create_backend against the dead server, daos_agent
stopped under an open engine, and a restarted (freshly formatted) engine.

They run only against a local engine that the tests may kill and restart: NIXL_DAOS_LOCAL names
the daos-local.sh that started it (ci/test.sh sets it), and DAOS_CONT is re-created after each
restart. Each scenario runs its consumer in a subprocess, so that the consumer's process staying
up is part of what is checked and DAOS state left behind by a dead server cannot leak into other
tests. The file's name sorts it after the other e2e files, and it leaves a working engine
behind (see the `local_daos` fixture).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import daoskit

HERE = Path(__file__).resolve().parent
LOCAL = os.environ.get("NIXL_DAOS_LOCAL", "")

pytestmark = pytest.mark.skipif(
    not (daoskit.TESTBED and LOCAL),
    reason="kills and restarts a real DAOS engine: needs NIXL_DAOS_TESTBED=1 and NIXL_DAOS_LOCAL=<daos-local.sh>",
)

TIMEOUT_MS = 2000


class LocalDaos:
    """The engine daos-local.sh started: its processes, and a restart (which formats afresh)."""

    def __init__(self, script: str):
        self.script = script
        self.run_dir = Path(os.environ.get("DAOS_LOCAL_DIR", "/tmp/daos-local")) / "run"
        self.dirty = False  # left dead or crippled by a test
        self.env: dict[str, str] = {}  # daos-local.sh settings of the running engine

    def ensure(self, **env: str) -> None:
        """A healthy engine started with these settings; then marked dirty for the test to come."""
        if self.dirty or env != self.env:
            self.restart(**env)
            self.env = env
        self.dirty = True

    def _pid(self, name: str) -> int:
        return int((self.run_dir / f"{name}.pid").read_text().strip())

    def server_pid(self) -> int:
        return self._pid("server")

    def agent_pid(self) -> int:
        return self._pid("agent")

    def engine_pid(self) -> int:
        """The daos_engine child of the daos_server this script started."""
        server = self.server_pid()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)
                comm = fields[0].split("(", 1)[1]
                ppid = int(fields[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == server and comm == "daos_engine":
                return int(stat.parent.name)
        raise AssertionError(f"no daos_engine child of daos_server {server}")

    def restart(self, **env: str) -> None:
        """Stop and start (a fresh format), with daos-local.sh settings overridden by env."""
        for cmd in ("stop", "start"):
            p = subprocess.run(
                ["bash", self.script, cmd], capture_output=True, text=True, timeout=240, env=dict(os.environ, **env)
            )
            assert p.returncode == 0, f"daos-local.sh {cmd}: {p.stdout}{p.stderr}"
        bindir = os.environ["DAOS_LOCAL_BIN"]
        p = subprocess.run(
            [f"{bindir}/daos", "cont", "create", os.environ["DAOS_POOL"], os.environ["DAOS_CONT"]],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, f"daos cont create: {p.stdout}{p.stderr}"


@pytest.fixture(scope="module")
def local_daos():
    """The local engine, shared by this file's tests: each one that leaves it dead, crippled or
    resized marks it dirty, and the next one restarts it as it needs it (`ensure`), so no restart
    is wasted. At the end it is restarted as it was, unless NIXL_DAOS_LOCAL_STOPS=1 says the
    caller stops it right after (ci/test.sh)."""
    d = LocalDaos(LOCAL)
    yield d
    if (d.dirty or d.env) and os.environ.get("NIXL_DAOS_LOCAL_STOPS") != "1":
        d.restart()


def consumer(script: Path, *args, timeout: float = 120, with_stderr: bool = False):
    """Runs a consumer script in a subprocess; returns the JSON object of its last stdout line
    (and its stderr, where the plugin logs, with_stderr)."""
    proc = subprocess.run(
        [sys.executable, str(script), *map(str, args)], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"consumer exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return (out, proc.stderr) if with_stderr else out


KILL_SCRIPT = HERE / "real_faults_kill.py"


def test_engine_killed_under_load_fails_every_request_by_its_deadline(local_daos):
    local_daos.ensure()
    out = consumer(KILL_SCRIPT, local_daos.engine_pid(), TIMEOUT_MS, timeout=180)
    bound = TIMEOUT_MS / 1000 + 0.5
    # A read ends at its deadline too (read_timeout_ms follows a shorter timeout_ms).
    read_bound = TIMEOUT_MS / 1000 + 0.5
    for i, (outcome, secs) in enumerate(out["during"]):
        # Done before the engine died, or failed by the deadline; never left hanging. The
        # consumer posts writes and reads in turn (even: WRITE, odd: READ).
        assert outcome in ("DONE", "ERR") and secs <= (bound if i % 2 == 0 else read_bound), out
    for outcome, secs in out["after"]:
        assert outcome == "ERR" and secs <= read_bound, out
    assert out["query"].get("s", 1e9) <= bound, out
    assert out["query_after"][0] == "ERR" and out["query_after"][1] <= bound, out
    assert out["teardown_s"] < 3, out
    assert out["create"] == "refused" and out["create_s"] <= bound + 1, out
    assert out["fresh_ok"], out
    local_daos.dirty = False  # the consumer restarted it


LATE_WRITE_SCRIPT = HERE / "real_faults_late_write.py"


def test_a_late_write_never_lands_the_refill_for_another_process(local_daos):
    """A WRITE that times out while the engine is stopped, its buffer refilled at once, then
    applied by DAOS once the engine runs again: another process reading the key all along sees
    a miss, the old value or the value as posted, never the refill."""
    local_daos.ensure()
    key = daoskit.unique_key("late-write")
    reader = subprocess.Popen(
        [sys.executable, str(LATE_WRITE_SCRIPT), "reader", key, "8"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,  # a log line per miss
        text=True,
    )
    time.sleep(0.5)
    w = consumer(LATE_WRITE_SCRIPT, "writer", local_daos.engine_pid(), key, timeout=60)
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0 and out.strip(), f"the reader exited {reader.returncode}: {err[-3000:]}"
    r = json.loads(out.strip().splitlines()[-1])
    print(f"  writer {w}; reader {r}")
    assert w["outcome"] == "ERR" and w["failed_s"] <= 1.5, w
    assert r["wrong"] == 0, f"another process read bytes no WRITE posted: {r}"
    assert r["v1"] > 0, f"the reader never read the key: {r}"
    # The late write was applied (DAOS held it), and it stored what was posted.
    assert r["v2"] > 0, f"the late write never showed: {r}"
    local_daos.dirty = False


AGENT_SCRIPT = HERE / "real_faults_agent.py"


def test_agent_stopped_under_an_open_engine(local_daos):
    local_daos.ensure()
    out, err = consumer(AGENT_SCRIPT, local_daos.agent_pid(), TIMEOUT_MS, timeout=120, with_stderr=True)
    bound = TIMEOUT_MS / 1000 + 0.5
    assert out["before"], out
    # DAOS evicts the process's handles when its agent goes: every later call fails at once,
    # and the log says what happened and what to do.
    for outcome, secs in out["results"]:
        assert outcome in ("DONE", "ERR") and secs <= bound, out
    if any(o == "ERR" for o, _ in out["results"]):
        assert "DER_NO_HDL" in err and "daos_agent" in err, err[-3000:]
    assert out["query"][1] <= bound, out
    assert out["teardown_s"] < 3, out
    assert out["create"] == "refused" and out["create_s"] <= bound + 1, out


FULL_SCRIPT = HERE / "real_faults_full.py"


def test_full_pool_says_so_and_recovers_when_space_is_freed(local_daos):
    """On an engine restarted with a small pool (restarted as it was afterwards)."""
    local_daos.ensure(DAOS_LOCAL_POOL_SIZE="256MiB")
    pool = os.environ["DAOS_POOL"]
    out, err = consumer(FULL_SCRIPT, pool, os.environ["DAOS_LOCAL_BIN"], timeout=240, with_stderr=True)
    assert out["full_error"] == "nixlBackendError" and 0 < out["filled"] < 200, out
    line = next((ln for ln in err.splitlines() if "DER_NOSPACE" in ln), "")
    assert f"pool={pool}" in line and "out of space" in line and "dmg pool extend" in line, err[-3000:]
    assert out["freed_rc"] == 0 and out["after"] == "written", out
