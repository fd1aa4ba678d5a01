# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_safety.py, run in a subprocess by test_release_in_flight_read_then_munmap:
Release of a READ in flight into an mmap'ed buffer, then munmap. Prints its findings as one JSON line."""

import json
import mmap
import time

import numpy as np

import daoskit
from daoskit import addr, pattern, unique_key

daoskit.prepare_environment()
sim = daoskit.Sim()
d = daoskit.DaosAgent(params={"timeout_ms": 10000})
size = 1 << 20
data = pattern(size, 1)
dev = d.put(unique_key("rel"), data)
sim.control("latency 300000")
m = mmap.mmap(-1, size)
buf = np.frombuffer(m, dtype=np.uint8)
regs = d.agent.register_memory([(addr(buf), size, 0, "")], "DRAM", backends=["DAOS"])
h, state = d.post("READ", [(addr(buf), size, 0)], [(0, size, dev)])
t0 = time.monotonic()
d.agent.release_xfer_handle(h)  # raises if the backend could not release it
release_s = time.monotonic() - t0
got = bytes(buf[:16])
buf[:] = 0xAB
time.sleep(0.5)
untouched = int(np.count_nonzero(buf == 0xAB))
d.agent.deregister_memory(regs, backends=["DAOS"])
del buf
m.close()  # munmap
time.sleep(0.5)  # a late fetch would SIGSEGV here
sim.control("latency 0")
print(json.dumps({"state": state, "release_s": release_s, "untouched": untouched, "read_ok": got == bytes(data[:16])}))
