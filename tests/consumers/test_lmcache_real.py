# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Across processes, as in production, on a real DAOS engine (daos-sim lives inside one process, so
only a real engine can show this). Runs when NIXL_DAOS_REAL=1 with DAOS_POOL and NIXL_DAOS_LIBDAOS
set by the caller (see conftest.py), e.g. inside the lock of the shared single-node engine:

    D=/work/shared/daos/daos-local.sh; $D start && eval "$($D env)" &&
    NIXL_DAOS_REAL=1 $CONSUMERS_VENV/bin/python -m pytest tests/consumers -v

Each role of lmc.py is its own process with its own LMCache engine, NIXL agent and plugin.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_engine

LMC = str(Path(__file__).resolve().parent / "lmc.py")
BIG = ["--layers", "8", "--heads", "8", "--head-size", "128"]  # 8 MiB chunks


def bucket() -> str:
    return f"lmc-real-{uuid.uuid4().hex[:10]}"


def run_role(*args, timeout=300) -> dict:
    p = subprocess.run([sys.executable, LMC, *args], capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"lmc.py {' '.join(args)} exited {p.returncode}:\n{p.stderr[-4000:]}"
    return json.loads(json_lines(p.stdout)[-1])


def json_lines(text: str) -> list[str]:
    """The role's reports: NIXL logs on stdout too, at INFO, one line each."""
    return [line for line in text.splitlines() if line.startswith("{")]


def test_process_b_finds_everything_process_a_stored():
    name = bucket()
    stored = run_role("store", "--bucket", name, "--seqs", "6", "--chunks", "8")
    assert stored == {"stored_chunks": 48}
    # Process A has exited; B starts afterwards with nothing but the bucket name.
    found = run_role("check", "--bucket", name, "--seqs", "6", "--chunks", "8")
    print(f"process B: {found}")
    assert found == {
        "total_chunks": 48,
        "hit_chunks": 48,
        "equal_chunks": 48,
        "present_chunks": 48,
        "whole_chunks": 48,
        "torn_chunks": 0,
        "unreadable": [],
    }, found


def test_a_writer_killed_mid_store_leaves_chunks_whole_or_missing():
    name = bucket()
    # 8-layer chunks of 8 MiB: each sequence (8 chunks, 64 MiB) takes long enough on the local
    # engine that a kill lands inside a store.
    writer = subprocess.Popen(
        [sys.executable, LMC, "store-forever", "--bucket", name, "--chunks", "8", *BIG],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    announced, store_s = [], []
    try:
        deadline = time.monotonic() + 240
        while len(announced) < 3:
            line = writer.stdout.readline()
            assert line, f"the writer exited ({writer.poll()}) before storing three sequences"
            if line.startswith("{"):
                report = json.loads(line)
                announced.append(report["stored_seq"])
                store_s.append(report["store_s"])
            assert time.monotonic() < deadline, "the writer is too slow"
        # The next store has just begun: aim at its second half, where LMCache writes to NIXL after
        # copying the chunks in (the stores so far took store_s each).
        time.sleep(random.uniform(0.55, 0.95) * min(store_s[1:]))
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL

    # The announced sequences are whole; the one being written (and the one after) are whole
    # or missing chunk by chunk, never torn bytes reported as a hit.
    first = announced[0]
    n = len(announced) + 2
    found = run_role("check", "--bucket", name, "--seqs", str(n), "--first-seed", str(first), "--chunks", "8", *BIG)
    interrupted = found["present_chunks"] - 8 * len(announced)
    print(
        f"writer killed {len(announced)} sequences in (stores took {', '.join(f'{t:.2f}' for t in store_s)} s);"
        f" reader: {found}; the interrupted sequence: {interrupted} of 8 chunks present, whole"
    )
    assert found["torn_chunks"] == 0, found
    assert found["present_chunks"] == found["whole_chunks"] >= 8 * len(announced), found
    assert found["hit_chunks"] == found["equal_chunks"] >= 8 * len(announced), found
