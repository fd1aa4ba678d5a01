"""Bounded growth: RSS and thread count stay flat across 1,000 queryMem calls that hit their
deadline under a hang (then resume), and across 1,000 agent create/destroy cycles. In a
subprocess, so that the figures are this workload's alone."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import daoskit
import pytest

# It drives daos-sim's hang/resume controls and reads its in-flight counter.
pytestmark = pytest.mark.skipif(daoskit.TESTBED, reason="needs daos-sim's controls and counters")

HERE = Path(__file__).resolve().parent

SCRIPT = textwrap.dedent(
    """
    import gc, json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    import daoskit
    daoskit.prepare_environment()
    sim = daoskit.Sim()

    def rss_kb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1])

    def threads():
        return len(os.listdir("/proc/self/task"))

    def cycles(n):
        for _ in range(n):
            a = daoskit.DaosAgent(params={"num_queues": 2})
            a.close()
            del a
        gc.collect()

    def settle():
        t0 = time.monotonic()
        while sim.stats()["inflight"] > 0 and time.monotonic() - t0 < 20:
            time.sleep(0.05)
        time.sleep(0.3)  # parked lanes reap every 100 ms

    cycles(100)  # warm-up: allocator pools, NIXL's plugin manager
    a0 = (rss_kb(), threads())
    cycles(1000)
    a1 = (rss_kb(), threads())

    q = daoskit.DaosAgent(params={"timeout_ms": 10, "num_queues": 2})
    keys = [daoskit.unique_key("grow") for _ in range(64)]
    timeouts = 0

    def hung_queries(n):
        global timeouts
        for i in range(n):
            if i % 50 == 0:
                settle()  # the resumed server answers; the engine reaps what it abandoned
            sim.control("hang")
            try:
                q.query(keys)
            except daoskit.nixl_errors():
                timeouts += 1
            sim.control("resume")
        settle()

    hung_queries(100)
    q0 = (rss_kb(), threads(), sim.stats()["inflight"])
    hung_queries(1000)
    q1 = (rss_kb(), threads(), sim.stats()["inflight"])
    print(json.dumps({"agents": [a0, a1], "queries": [q0, q1], "timeouts": timeouts}))
    """
)


def test_rss_and_threads_stay_flat():
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(HERE)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"growth: {out}")
    (r0, t0), (r1, t1) = out["agents"]
    assert t1 == t0, f"threads {t0} -> {t1} over 1,000 agent create/destroy cycles"
    assert r1 - r0 < 16 * 1024, f"RSS +{(r1 - r0) // 1024} MiB over 1,000 agent create/destroy cycles"
    assert "DER_BUSY" not in proc.stderr, "an engine closed its container with a child still open"
    (r0, t0, i0), (r1, t1, i1) = out["queries"]
    assert out["timeouts"] >= 1000, out  # the hang did hold every call to its deadline
    assert i0 == 0 and i1 == 0, f"queries left inside DAOS after resume: {i0}, {i1}"
    assert t1 == t0, f"threads {t0} -> {t1} over 1,000 hung queryMem calls"
    assert r1 - r0 < 16 * 1024, f"RSS +{(r1 - r0) // 1024} MiB over 1,000 hung queryMem calls"
