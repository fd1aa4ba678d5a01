# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Consumer of tests/e2e/test_real_faults.py: its requests in flight while the engine is killed
(SIGKILL of the pid in argv[1]; argv[2]: timeout_ms). Prints one JSON line."""

import gc
import json
import os
import signal
import sys
import threading
import time

import daoskit
from daoskit import addr, np
from real_faults_common import ERRS, create_backend_timed, finish, finish_all, restart

engine_pid, timeout_ms = int(sys.argv[1]), int(sys.argv[2])
limit = timeout_ms / 1000 + 5
a = daoskit.DaosAgent(params={"timeout_ms": timeout_ms, "num_queues": 2})
size = 4 << 20
data = daoskit.pattern(size)
keys = [a.put(daoskit.unique_key("kill"), data) for _ in range(4)]
names = [daoskit.unique_key("killq") for _ in range(3)]
for n in names:
    a.put(n, data[:4096])
bufs = [np.zeros(size, np.uint8) for _ in range(8)]
for b in bufs:
    a.reg_dram(b)
# In flight at the kill: 4 writes and 4 reads of 4 MiB, and a queryMem in another thread.
posted = []
for i, b in enumerate(bufs):
    op = "WRITE" if i % 2 == 0 else "READ"
    t = time.monotonic()
    h, st = a.post(op, [(addr(b), size, 0)], [(0, size, keys[i % 4])])
    posted.append((h, st, t))
q = {}


def query():
    t = time.monotonic()
    try:
        q["result"] = repr(a.query(names))  # noqa: F821 (`del a` below comes after this thread ends)
    except ERRS:
        q["result"] = "ERR"
    q["s"] = time.monotonic() - t


qt = threading.Thread(target=query)
qt.start()
os.kill(engine_pid, signal.SIGKILL)
t_kill = time.monotonic()
during = finish_all(a, posted, limit)
qt.join(limit)
# Posted after the kill: must fail by their deadline.
after = []
for i in range(4):
    b = bufs[i]
    t = time.monotonic()
    h, st = a.post("READ", [(addr(b), size, 0)], [(0, size, keys[i])])
    after.append(finish(a, h, st, t, limit))
    posted.append((h, None, t))
t = time.monotonic()
try:
    qa = repr(a.query(names))
except ERRS:
    qa = "ERR"
q_after = ("ERR" if qa == "ERR" else qa, time.monotonic() - t)
for h, _, _ in posted:
    a.release(h)
t = time.monotonic()
a.agent = None
del a
gc.collect()
teardown_s = time.monotonic() - t
# create_backend against the dead engine: refused in bounded time.
create, create_s = create_backend_timed(timeout_ms)
# The same process, once the engine is back (a fresh format: the old keys are gone).
restart()
b = daoskit.DaosAgent(params={"timeout_ms": timeout_ms})
dev = b.put(daoskit.unique_key("reborn"), data)
fresh_ok = bool((b.get(dev, size) == data).all())
b.close()
print(
    json.dumps(
        {
            "during": during,
            "query": q,
            "after": after,
            "query_after": q_after,
            "teardown_s": teardown_s,
            "create": create,
            "create_s": create_s,
            "fresh_ok": fresh_ok,
        }
    )
)
sys.stdout.flush()
os._exit(0)  # DAOS's own teardown may still wait on the dead engine
