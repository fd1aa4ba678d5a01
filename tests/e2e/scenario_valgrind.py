# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The scenarios of issue 8 in one short process, for valgrind (tests/e2e/test_valgrind.py):
release in flight (READ and WRITE), a prepped OBJ list after deregistration, queryMem past its
deadline then resume, a hung request then agent destruction, and exit with fetches in flight."""

import gc
import time

import numpy as np

import daoskit
from daoskit import addr, nixl_errors, pattern, unique_key

daoskit.prepare_environment()
sim = daoskit.Sim()
size = 64 * 1024

# Release in flight: returns at once, the buffer is the caller's again, and DAOS's answers
# land in the plugin's staging buffers (freed as DAOS gives them back).
d = daoskit.DaosAgent(params={"timeout_ms": 20000, "num_queues": 2})
data = pattern(size, 1)
dev = d.put(unique_key("vg"), data)
sim.control("latency 100000")
buf = np.zeros(size, np.uint8)
d.reg_dram(buf)
h, _ = d.post("READ", [(addr(buf), size, 0)], [(0, size, dev)])
d.release(h)
buf[:] = 0x5A
h, _ = d.post("WRITE", [(addr(buf), size, 0)], [(0, size, dev)])
d.release(h)
time.sleep(0.3)
assert not np.count_nonzero(buf != 0x5A), "a released READ wrote its buffer"
sim.control("latency 0")

# A prepped OBJ list outliving its registration fails cleanly.
gone = d.reg_obj(unique_key("gone"), size)
lh, rh = d.prep_dram([(addr(buf), size, 0)]), d.prep_obj([(0, size, gone)])
d.dereg_obj(gone)
try:
    d.prepped("WRITE", lh, [0], rh, [0], timeout=20)
    raise SystemExit("a prepped list of a deregistered key was accepted")
except nixl_errors():
    pass
d.close()
del d, h, lh, rh
gc.collect()

# queryMem past its deadline, then resume: the engine reaps the abandoned queries.
# create_backend shares timeout_ms with daos_init, which under valgrind alone takes more than
# 300 ms; the queries get 2 s, the hung read 300 ms.
q = daoskit.DaosAgent(params={"timeout_ms": 2000, "read_timeout_ms": 300})
sim.control("hang")
try:
    q.query([unique_key("q") for _ in range(64)])
except nixl_errors():
    pass
sim.control("resume")
time.sleep(1.0)

# A hung request, then the agent goes (release returns at once, destroy is bounded).
dev = q.put(unique_key("hung"), data)
hb = np.zeros(size, np.uint8)
q.reg_dram(hb)
sim.control("hang")
h, state = q.post("READ", [(addr(hb), size, 0)], [(0, size, dev)])
try:
    q.wait(h, state, timeout=30)
except nixl_errors():
    pass
try:
    q.release(h)
except nixl_errors():
    pass
q.agent = None
del q, h
gc.collect()
sim.control("resume")

# Exit with fetches in flight: Python frees buffers and handles in its own order.
e = daoskit.DaosAgent(params={"timeout_ms": 20000})
dev = e.put(unique_key("exit"), data)
sim.control("latency 300000")
bufs, handles = daoskit.post_reads_left_in_flight(e, dev, size, 4)
print("scenario done", flush=True)
