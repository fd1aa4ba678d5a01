# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Keys outlive the process that wrote them: writers and readers in separate processes, as when a
serving process restarts or several workers share one cache. Real DAOS only: daos-sim keeps its
data in the memory of the process that loaded it."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import daoskit

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(
    not daoskit.TESTBED, reason="daos-sim keeps data in one process's memory (runs against real DAOS)"
)

WRITER = HERE / "processes_writer.py"


READER = HERE / "processes_reader.py"


def run(script: Path, *args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(script), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def result(p: subprocess.Popen, timeout: float = 120) -> dict:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\n{out[-2000:]}\n{err[-4000:]}"
    return json.loads(out.strip().splitlines()[-1])


def test_a_later_process_reads_what_an_exited_one_wrote():
    prefix, n, size = f"xproc-{uuid.uuid4().hex}", 6, 300_001
    assert result(run(WRITER, prefix, n, size, 100)) == {"written": n}
    out = result(run(READER, json.dumps([[prefix, n, size, 100]])))
    assert out["bad"] == [], out
    assert out["sizes"] == out["want"], out


def test_two_writers_at_once_and_a_third_reads_both():
    a, b = f"xa-{uuid.uuid4().hex}", f"xb-{uuid.uuid4().hex}"
    wa, wb = run(WRITER, a, 8, 64 * 1024, 1), run(WRITER, b, 8, 96 * 1024, 50)
    assert result(wa) == {"written": 8} and result(wb) == {"written": 8}
    out = result(run(READER, json.dumps([[a, 8, 64 * 1024, 1], [b, 8, 96 * 1024, 50]])))
    assert out["bad"] == [], out
    assert out["sizes"] == out["want"], out
