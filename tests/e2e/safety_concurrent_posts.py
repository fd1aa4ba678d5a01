# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_safety.py, run in a subprocess by test_concurrent_posts_of_one_handle:
Two threads post one handle at once. Prints its findings as one JSON line."""

import json
import threading
import time

import numpy as np

import daoskit
from daoskit import addr, pattern, unique_key

daoskit.prepare_environment()
sim = daoskit.Sim()
# nixl_cu12 loads once the environment is set, as in the test process.
from nixl_cu12._api import nixl_thread_sync_t  # noqa: E402

d = daoskit.DaosAgent(params={"timeout_ms": 10000}, sync_mode=nixl_thread_sync_t.NIXL_THREAD_SYNC_STRICT)
size = 256 * 1024
data = pattern(size, 5)
dev = d.put(unique_key("twice"), data)
sim.control("latency 200000")
late = 0
errors = []
for _ in range(4):
    buf = np.zeros(size, np.uint8)
    d.reg_dram(buf)
    h = d.agent.initialize_xfer(
        "READ",
        d.agent.get_xfer_descs([(addr(buf), size, 0)], "DRAM"),
        d.agent.get_xfer_descs([(0, size, dev)], "OBJ"),
        d.name,
    )
    gate = threading.Barrier(2)

    def go(gate=gate, h=h):  # this round's barrier and handle (the threads end within the round)
        gate.wait()
        try:
            d.agent.transfer(h)
        except Exception as e:
            errors.append(type(e).__name__)

    ts = [threading.Thread(target=go) for _ in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    try:
        d.agent.release_xfer_handle(h)
    except Exception as e:
        errors.append("release:" + type(e).__name__)
        continue
    buf[:] = 0xCD
    time.sleep(0.3)
    late += int(np.count_nonzero(buf != 0xCD))
sim.control("latency 0")
print(json.dumps({"late": late, "errors": errors}))
