# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""In-flight deregistration, a hung DAOS server, and tearing an agent down while I/O hangs."""

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from nixl_cu12._bindings import nixlBackendError

import daoskit
from daoskit import addr, assert_same, pattern, unique_key

KiB = 1 << 10
HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("op", ["WRITE", "READ"])
def test_deregister_obj_while_in_flight(agent, sim, op):
    """KVBM drops its registration right after posting: the transfer must still complete."""
    size, key = 256 * KiB, unique_key("dereg")
    data = pattern(size)
    if op == "READ":
        agent.put(key, data)
    buf = data if op == "WRITE" else np.zeros(size, np.uint8)
    agent.reg_dram(buf)
    dev = agent.reg_obj(key, size)
    sim.control("latency 200000")  # 200 ms per RPC keeps it in flight
    h, state = agent.post(op, [(addr(buf), size, 0)], [(0, size, dev)])
    try:
        assert state == "PROC"
        agent.dereg_obj(dev)
        waited = agent.wait(h, state, timeout=10)
    finally:
        agent.release(h)
    sim.control("latency 0")
    assert waited > 0.1, f"done after {waited:.3f} s: the latency did not apply"
    if op == "READ":
        assert_same(buf, data)
    else:
        assert_same(agent.get(agent.reg_obj(key, size), size), data)


def test_hang_hits_deadline_then_recovers(make_agent, sim):
    timeout_s = 0.5
    agent = make_agent({"timeout_ms": int(timeout_s * 1000)})
    size = 64 * KiB
    data = pattern(size)
    dev = agent.put(unique_key("hang"), data)
    late, fresh = np.zeros(size, np.uint8), np.zeros(size, np.uint8)
    agent.reg_dram(late)
    agent.reg_dram(fresh)

    sim.control("hang")
    t0 = time.monotonic()
    h, state = agent.post("READ", [(addr(late), size, 0)], [(0, size, dev)])
    try:
        with pytest.raises(nixlBackendError):
            agent.wait(h, state, timeout=timeout_s + 5)
        elapsed = time.monotonic() - t0
    finally:
        agent.release(h)
    # A read DAOS still holds fails at its deadline (DAOS answers into the plugin's buffer).
    assert timeout_s * 0.9 <= elapsed <= timeout_s + 0.5, f"deadline fired after {elapsed:.3f} s"
    late[:] = 0x5A  # the caller reuses the buffer at once

    sim.control("resume")
    agent.xfer("READ", [(addr(fresh), size, 0)], [(0, size, dev)], timeout=5)
    assert_same(fresh, data, "read after resume")
    time.sleep(0.05)
    assert np.all(late == 0x5A), "the timed-out read's late answer reached the caller's buffer"


def test_query_under_hang_hits_deadline(make_agent, sim):
    timeout_s = 0.5
    agent = make_agent({"timeout_ms": int(timeout_s * 1000)})
    key = unique_key("qhang")
    agent.put(key, pattern(4 * KiB))
    sim.control("hang")
    t0 = time.monotonic()
    with pytest.raises(nixlBackendError):
        agent.query([key, unique_key("absent")])
    elapsed = time.monotonic() - t0
    assert elapsed <= timeout_s + 0.5, f"query returned after {elapsed:.3f} s"
    sim.control("resume")
    res = agent.query([key])
    assert res[0] is not None and int(res[0]["size"]) == 4 * KiB


DESTROY_SCRIPT = HERE / "faults_destroy.py"


def test_destroy_agent_while_requests_hang(sim):
    """In a subprocess, so that the agent really goes and a wedged teardown cannot stall the
    suite. It must return in bounded time and leave no lane thread behind."""
    proc = subprocess.run(
        [sys.executable, str(DESTROY_SCRIPT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["states"] == ["PROC"] * 4, out
    assert out["lanes_before"], "no nixl-daos-lane thread while the backend was alive"
    assert out["release_s"] < 2 + 5, out  # bounded by the 2 s deadline the requests share
    assert out["destroy_s"] < 5, out
    assert out["lanes_after"] == [], out


FORK_SCRIPT = HERE / "faults_fork.py"


def test_forked_child_fails_clearly_and_parent_keeps_working():
    """libdaos does not survive fork(): a child that inherits a backend is refused at once with a
    message saying so, its teardown touches nothing, and the parent's backend keeps working."""
    proc = subprocess.run([sys.executable, str(FORK_SCRIPT)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == 0 and out["child"]["query"] == "refused" and out["child"]["read"] == "refused", out
    assert out["child"]["child_s"] < 3, out
    assert out["parent_ok"], out
    assert "forked child cannot use it" in proc.stderr, proc.stderr[-3000:]


@pytest.mark.skipif(daoskit.TESTBED, reason="daos-sim's connect_delay holds a pool connect inside libdaos")
@pytest.mark.parametrize("how,status", [("exit", 7), ("fall", 0)])
def test_exit_with_a_connect_past_its_deadline(how, status):
    """A process whose create_backend was refused at its deadline exits while the pool connect
    is still inside libdaos: the libraries' destructors must not run under it (on DAOS 2.8 that
    was a SIGSEGV in libna's transport plugin, 2 exits of 64 after a refused create_backend with
    an engine killed). daos-sim aborts if they do. The exit keeps its status and its output, and
    does not wait for the connect (4 s away)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(HERE / "faults_exit_connecting.py"), how],
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - t0
    assert proc.returncode == status, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert "refused after" in proc.stdout and "last line of output" in proc.stdout, proc.stdout
    assert "without running the libraries' destructors" in proc.stderr, proc.stderr[-4000:]
    assert took < 3.5, f"the exit waited for the connect: {took:.1f} s"
