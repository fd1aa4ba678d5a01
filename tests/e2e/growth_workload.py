# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Workload of tests/e2e/test_growth.py: RSS and thread count across 1,000 agent create/destroy
cycles and 1,000 hung queryMem calls; prints one JSON line with the figures."""

import gc
import json
import os
import time

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
