# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Consumer of tests/e2e/test_real_faults.py: its requests in flight while daos_agent is stopped
(pid in argv[1]; argv[2]: timeout_ms). Prints one JSON line."""

import gc
import json
import os
import signal
import sys
import time

import daoskit
from daoskit import addr, np
from real_faults_common import ERRS, create_backend_timed, finish

agent_pid, timeout_ms = int(sys.argv[1]), int(sys.argv[2])
a = daoskit.DaosAgent(params={"timeout_ms": timeout_ms})
size = 1 << 20
data = daoskit.pattern(size)
key = daoskit.unique_key("agent")
dev = a.put(key, data)
before = bool((a.get(dev, size) == data).all())
os.kill(agent_pid, signal.SIGINT)
for _ in range(200):
    if not os.path.exists(f"/proc/{agent_pid}"):
        break
    time.sleep(0.05)
time.sleep(1)  # let the servers act on the agent's departure
buf = np.zeros(size, np.uint8)
a.reg_dram(buf)
results = []
for op in ("READ", "WRITE", "READ"):
    t = time.monotonic()
    try:
        h, st = a.post(op, [(addr(buf), size, 0)], [(0, size, dev)])
        outcome = finish(a, h, st, t, timeout_ms / 1000 + 5)
        a.release(h)
    except ERRS:
        outcome = ("ERR", time.monotonic() - t)
    results.append(outcome)
t = time.monotonic()
try:
    qa = repr(a.query([key]))
except ERRS:
    qa = "ERR"
query = (qa, time.monotonic() - t)
t = time.monotonic()
a.close()
a.agent = None
del a
gc.collect()
teardown_s = time.monotonic() - t
create, create_s = create_backend_timed(timeout_ms)
print(
    json.dumps(
        {
            "before": before,
            "results": results,
            "query": query,
            "teardown_s": teardown_s,
            "create": create,
            "create_s": create_s,
        }
    )
)
sys.stdout.flush()
os._exit(0)
