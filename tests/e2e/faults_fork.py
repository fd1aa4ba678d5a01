# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_faults.py: a forked child uses the backend it inherited (refused)
and the parent keeps working; prints one JSON line."""

import gc
import json
import os
import time

import daoskit

daoskit.prepare_environment()
errs = daoskit.nixl_errors()
a = daoskit.DaosAgent(params={"timeout_ms": 5000})
size = 64 * 1024
data = daoskit.pattern(size)
key = daoskit.unique_key("fork")
dev = a.put(key, data)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    out = {}
    t = time.monotonic()
    try:
        a.query([key])
        out["query"] = "answered"
    except errs:
        out["query"] = "refused"
    try:
        a.get(dev, size, offset=0)
        out["read"] = "answered"
    except errs:
        out["read"] = "refused"
    a.agent = None  # the child's copy of the backend is destroyed here
    del a
    gc.collect()
    out["child_s"] = time.monotonic() - t
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
_, status = os.waitpid(pid, 0)
child = json.loads(os.read(r, 4096) or b"{}")
# The parent's backend is untouched by the child.
parent_ok = bool((a.get(dev, size) == data).all()) and a.query([key])[0] is not None
print(json.dumps({"child": child, "status": status, "parent_ok": parent_ok}))
