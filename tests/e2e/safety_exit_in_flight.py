"""Scenario of tests/e2e/test_safety.py, run in a subprocess by test_exit_with_transfers_in_flight:
Interpreter exit with fetches in flight. Prints its findings as one JSON line."""

import json
import sys

import daoskit
from daoskit import pattern, unique_key

daoskit.prepare_environment()
sim = daoskit.Sim()
d = daoskit.DaosAgent(params={"timeout_ms": 10000, "num_queues": 2})
size = 1 << 20
dev = d.put(unique_key("exit"), pattern(size, 4))
sim.control("latency 300000")
bufs, handles = daoskit.post_reads_left_in_flight(d, dev, size, 8)
print(json.dumps({"posted": len(handles)}))
sys.stdout.flush()
# falls off the end: Python frees buffers, handles and the agent in its own order
