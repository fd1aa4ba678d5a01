# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_safety.py, run in a subprocess by the test_exit_* tests (and looped
on a real engine by ci/exit-loop.sh): interpreter exit with fetches in flight. Argument: daos-sim's
latency in microseconds (default 300000; no effect on a real engine). Prints one JSON line."""

import json
import sys

import daoskit
from daoskit import pattern, unique_key

daoskit.prepare_environment()
sim = daoskit.Sim()
d = daoskit.DaosAgent(params={"timeout_ms": 10000, "num_queues": 2})
size = 1 << 20
dev = d.put(unique_key("exit"), pattern(size, 4))
sim.control(f"latency {int(sys.argv[1]) if len(sys.argv) > 1 else 300000}")
bufs, handles = daoskit.post_reads_left_in_flight(d, dev, size, 8)
print(json.dumps({"posted": len(handles)}))
sys.stdout.flush()
# falls off the end: Python frees buffers, handles and the agent in its own order
