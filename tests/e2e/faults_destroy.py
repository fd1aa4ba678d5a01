# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_faults.py: an agent destroyed while its READs hang in daos-sim;
prints one JSON line with the states, timings and lane threads before and after."""

import gc
import json
import sys
import time

import daoskit

daoskit.prepare_environment()
sim = daoskit.Sim()
d = daoskit.DaosAgent(params={"timeout_ms": 2000, "num_queues": 2})
size = 64 * 1024
data = daoskit.pattern(size)
dev = d.put(daoskit.unique_key("destroy"), data)
lanes_before = daoskit.lane_threads()
sim.control("hang")
bufs, handles = [], []
for _ in range(4):
    buf = daoskit.np.zeros(size, daoskit.np.uint8)
    d.reg_dram(buf)
    bufs.append(buf)
    handles.append(d.post("READ", [(daoskit.addr(buf), size, 0)], [(0, size, dev)])[0])
states = [d.agent.check_xfer_state(h) for h in handles]
t0 = time.monotonic()
# Each handle's finalizer releases its hung request: release waits for DAOS until the
# request's deadline, then fails (DAOS still holds the buffer), and the bindings keep the
# handle in the agent's leak list.
handles.clear()
release_s = time.monotonic() - t0
t0 = time.monotonic()
d.agent = None  # the last reference to the agent: its destructor destroys the backend
del d
gc.collect()
destroy_s = time.monotonic() - t0
lanes_after = daoskit.lane_threads()
sim.control("resume")
print(
    json.dumps(
        {
            "states": states,
            "lanes_before": lanes_before,
            "release_s": release_s,
            "destroy_s": destroy_s,
            "lanes_after": lanes_after,
        }
    )
)
sys.stdout.flush()
