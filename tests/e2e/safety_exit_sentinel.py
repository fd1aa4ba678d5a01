# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_safety.py, run in a subprocess by the test_exit_sentinel_* tests:
checks the exit race itself rather than log lines. READs are left in flight at interpreter exit,
and a Python atexit callback of this script fills their buffers with a sentinel, waits several
of daos-sim's latencies, and counts the buffers something wrote meanwhile.

Python runs atexit callbacks last-registered first. Argument "after" registers the check before
the backend exists, so it runs after the plugin's quiesce: nothing may touch the buffers then.
Argument "before" (the control) registers it after the plugin's callback, so it runs while the
plugin still drives DAOS and the fetches land in the sentinel: the check can see a landing.
Second argument: daos-sim's latency in microseconds (default 300000). Prints one JSON line."""

import atexit
import json
import sys
import time

import numpy as np

import daoskit
from daoskit import pattern, unique_key

order = sys.argv[1]
latency_us = int(sys.argv[2]) if len(sys.argv) > 2 else 300_000
SENTINEL = 0xEE
state: dict = {}


def check():
    bufs, want = state["bufs"], state["want"]
    landed_before = sum(bool(np.array_equal(b, want)) for b in bufs)
    for b in bufs:
        b.fill(SENTINEL)
    time.sleep(max(1.0, 4 * latency_us / 1e6))
    touched = sum(1 for b in bufs if not bool((b == SENTINEL).all()))
    print(json.dumps({"order": order, "posted": len(bufs), "landed_before": landed_before, "touched": touched}))
    sys.stdout.flush()


if order == "after":
    atexit.register(check)
daoskit.prepare_environment()
sim = daoskit.Sim()
d = daoskit.DaosAgent(params={"timeout_ms": 30000, "num_queues": 2})
size = 1 << 20
want = pattern(size, 5)
dev = d.put(unique_key("sentinel"), want)
sim.control(f"latency {latency_us}")
bufs, handles = daoskit.post_reads_left_in_flight(d, dev, size, 8)
state.update(bufs=bufs, want=want, handles=handles)
if order == "before":
    atexit.register(check)
# falls off the end: atexit callbacks, then Python frees buffers, handles and the agent
