# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""One tenant of tests/e2e/test_real_acl.py: started as root, it loads what it needs, becomes
the Unix user it is given (uid and gid, no supplementary groups), and only then creates its NIXL
agent, so that daos_agent and the DAOS ACLs see that user. argv[1]: a JSON object with
  uid, gid        the user to become (0: stay root)
  params          backend parameters (container, cont_acl, evict_keep_free, ...)
  write           [[key, bytes, seed], ...] to write
  read            [[key, bytes, seed], ...] to read back and compare with pattern(bytes, seed)
  fill            [prefix, keys, bytes]: that many keys written, failures counted
  try_write       [key, bytes, seed] to attempt once more at the end (its error is the answer)
  hold_s          seconds to keep the backend open after the writes, before the reads (its
                  evictor's time to act)
Prints one JSON line: create ("ok" or the error), written, filled and fill_failed, and of the
fill's oldest tenth how many keys are present (fill_oldest_present), read {key: "ok" | "wrong" |
"miss"}, query {key: length or null}, try_write ("ok" or the error), euid."""

# Everything is imported before the user changes: root's interpreter lives where that user
# may not read (secrets: imported lazily by NIXL's Python API).
import json
import os
import secrets  # noqa: F401
import sys
import tempfile
import time

import numpy as np
from nixl_cu12 import _bindings  # noqa: F401
from nixl_cu12._api import nixl_agent, nixl_agent_config  # noqa: F401

import daoskit

spec = json.loads(sys.argv[1])
if spec.get("uid"):
    os.setgroups([])
    os.setresgid(spec["gid"], spec["gid"], spec["gid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    # NIXL reads $HOME/.nixl.cfg: root's home is not this user's to read.
    os.environ["HOME"] = tempfile.mkdtemp(prefix="nixl-tenant-home-")
out: dict = {"euid": os.geteuid()}


def err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


try:
    agent = daoskit.DaosAgent(params=spec.get("params", {}))
    out["create"] = "ok"
except Exception as e:  # noqa: BLE001  (the refusal is the answer)
    out["create"] = err(e)
    print(json.dumps(out))
    sys.exit(0)

out["written"] = 0
for key, size, seed in spec.get("write", []):
    agent.put(key, daoskit.pattern(size, seed))
    out["written"] += 1
# A fill of [prefix, keys, bytes]: writes that fail (a full pool) are counted, not raised.
out["filled"] = out["fill_failed"] = 0
if "fill" in spec:
    prefix, n, size = spec["fill"]
    data = daoskit.pattern(size, 7)
    agent.reg_dram(data)
    for i in range(n):
        dev = agent.reg_obj(f"{prefix}/{i}", size)
        try:
            agent.xfer("WRITE", [(daoskit.addr(data), size, 0)], [(0, size, dev)], timeout=60)
            out["filled"] += 1
        except daoskit.nixl_errors():
            out["fill_failed"] += 1
        agent.dereg_obj(dev)

time.sleep(spec.get("hold_s", 0))
if "fill" in spec:
    # The oldest keys are what eviction takes first.
    out["fill_oldest_present"] = sum(q is not None for q in agent.query([f"{prefix}/{i}" for i in range(n // 10)]))

out["read"] = {}
for key, size, seed in spec.get("read", []):
    dev = agent.reg_obj(key, size)
    try:
        got = agent.get(dev, size)
        out["read"][key] = "ok" if np.array_equal(got, daoskit.pattern(size, seed)) else "wrong"
    except daoskit.backend_error():
        out["read"][key] = "miss"
out["query"] = {}
keys = [k for k, _, _ in spec.get("read", [])]
if keys:
    for key, q in zip(keys, agent.query(keys)):
        out["query"][key] = None if q is None else int(q.get("size", -1))

if "try_write" in spec:
    key, size, seed = spec["try_write"]
    try:
        agent.put(key, daoskit.pattern(size, seed))
        out["try_write"] = "ok"
    except daoskit.nixl_errors() as e:
        out["try_write"] = err(e)

agent.close()
print(json.dumps(out))
