# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""What the plugin says, and at which level: each case runs in a subprocess so its stderr (where
the plugin logs through `tracing`) can be read, with NIXL_LOG_LEVEL set before the plugin loads."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import daoskit

HERE = Path(__file__).resolve().parent

SCRIPT = HERE / "logging_create.py"


def run(params: dict, level: str, extra_env: dict | None = None, clear: bool = False) -> subprocess.CompletedProcess:
    """The script in a subprocess; its environment is ours plus extra_env (only extra_env with
    clear=True)."""
    env = dict({} if clear else os.environ, **(extra_env or {}), NIXL_LOG_LEVEL=level)
    return subprocess.run(
        [sys.executable, str(SCRIPT), json.dumps(params)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_bad_value_log_names_parameter_value_and_what_is_accepted():
    p = run({"timeout_ms": "abc"}, "WARN")
    assert p.stdout.split() == ["refused", "refused"], p.stdout + p.stderr
    line = next((ln for ln in p.stderr.splitlines() if "timeout_ms" in ln), "")
    assert '"abc"' in line and "integer" in line, p.stderr


def test_missing_libdaos_log_says_which_file_and_what_to_set():
    p = run({"daos_lib": "/nonexistent/libdaos.so.2"}, "WARN")
    assert p.stdout.split() == ["refused", "refused"], p.stdout + p.stderr
    assert "/nonexistent/libdaos.so.2" in p.stderr and "NIXL_DAOS_LIBDAOS" in p.stderr, p.stderr


def test_unknown_parameter_logged_once_and_ignored():
    p = run({"region": "us-east-1", "scheme": "https"}, "WARN")
    assert p.stdout.split() == ["created", "created"], p.stdout + p.stderr
    assert p.stderr.count('unknown parameters "region", "scheme"') == 1, p.stderr


def test_nixl_log_level_is_respected():
    quiet = run({"region": "us-east-1"}, "ERROR")
    assert quiet.stdout.split() == ["created", "created"], quiet.stdout + quiet.stderr
    assert "region" not in quiet.stderr, quiet.stderr
    chatty = run({}, "INFO")
    assert "DAOS backend ready" in chatty.stderr, chatty.stderr
    assert "DAOS backend ready" not in run({}, "WARN").stderr


needs_real_daos = pytest.mark.skipif(
    not daoskit.TESTBED, reason="libdaos's own logging: daos-sim has none (runs against real DAOS)"
)


def _libdaos_lines(text: str) -> list[str]:
    """Lines in DAOS's log format (`... DAOS[pid/tid/ctx] fac LEVEL file:line ...`)."""
    return [ln for ln in text.splitlines() if re.search(r"DAOS\[\d+/\d+/\d+\]", ln)]


@needs_real_daos
def test_libdaos_log_goes_to_a_file_not_stdout(tmp_path):
    """D_LOG_FILE unset: the plugin points it at a file in a private dir of the temp dir before
    libdaos starts, so DAOS's lines (many at D_LOG_MASK=INFO) land there and the consumer's
    stdout stays ours."""
    env = {k: v for k, v in os.environ.items() if k != "D_LOG_FILE"}
    p = run({}, "WARN", extra_env=dict(env, TMPDIR=str(tmp_path), D_LOG_MASK="INFO"), clear=True)
    assert p.stdout.split() == ["created", "created"], p.stdout + p.stderr
    assert not _libdaos_lines(p.stdout), p.stdout
    log = tmp_path / f"nixl-daos.{os.geteuid()}" / "libdaos.log"
    assert log.is_file() and _libdaos_lines(log.read_text(errors="replace")), list(tmp_path.iterdir())


@needs_real_daos
def test_libdaos_log_file_chosen_by_the_user_is_kept(tmp_path):
    mine = tmp_path / "mine.log"
    p = run({}, "WARN", extra_env=dict(TMPDIR=str(tmp_path), D_LOG_FILE=str(mine), D_LOG_MASK="INFO"))
    assert p.stdout.split() == ["created", "created"], p.stdout + p.stderr
    assert not _libdaos_lines(p.stdout), p.stdout
    assert _libdaos_lines(mine.read_text(errors="replace"))
    assert not (tmp_path / f"nixl-daos.{os.geteuid()}").exists()


def test_object_spans_the_pool_targets():
    """The keys' object gets as many redundancy groups as the pool has targets (RF0 container,
    one target per group), not one: the plugin asks DAOS for the pool-wide sharding hint. The
    count is in the INFO line of create_backend. daos-sim's pool has 8 targets; on real DAOS
    NIXL_DAOS_TEST_TARGETS names the pool's target count (ci/test.sh sets it)."""
    want = os.environ.get("NIXL_DAOS_TEST_TARGETS") if daoskit.TESTBED else "8"
    if not want:
        pytest.skip("set NIXL_DAOS_TEST_TARGETS to the pool's target count to check the group count")
    p = run({}, "INFO")
    groups = re.findall(r"DAOS backend ready.* groups=(\d+)", p.stderr)
    assert groups == [want, want], p.stderr


def test_totals_are_reported_at_exit(tmp_path):
    """The plugin's own count of what it moved, for end-to-end checks against a consumer's
    (tests/vllm): written at process exit, without the agent being closed."""
    stats = tmp_path / "totals.jsonl"
    proc = subprocess.run(
        [sys.executable, str(HERE / "totals_report.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, NIXL_DAOS_STATS_FILE=str(stats), NIXL_LOG_LEVEL="INFO"),
    )
    assert proc.returncode == 0 and "moved" in proc.stdout, proc.stderr[-3000:]
    lines = stats.read_text().splitlines()
    assert len(lines) == 1, lines
    t = json.loads(lines[0])
    assert t["pid"] > 0
    w, r = t["writes"], t["reads"]
    assert (w["ok"], w["keys"], w["bytes"], w["failed"]) == (1, 2, 8192, 0), w
    assert w["rpcs"] >= 2 and w["rpc_errors"] == 0, w  # two keys: two RPCs at least
    assert (r["ok"], r["keys"], r["bytes"]) == (1, 1, 4096), r
    assert (r["failed"], r["missing"]) == (1, 1), r
    assert "DAOS backend totals for this process" in proc.stderr, proc.stderr[-2000:]
