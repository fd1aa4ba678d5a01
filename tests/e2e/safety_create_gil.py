# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_safety.py, run in a subprocess by test_create_backend_beside_a_gil_holder:
while one Python thread creates the DAOS backend (NIXL's binding gives the GIL up and holds the
agent lock), another keeps calling an agent method whose binding keeps the GIL while it waits
for that lock (the binding's getBackendParams of a POSIX backend). A plugin that takes the GIL inside
create_backend deadlocks here; the caller's timeout is the check. Prints one JSON line."""

import json
import threading
import time

import daoskit

daoskit.prepare_environment(with_posix=True)
from nixl_cu12._api import nixl_agent, nixl_agent_config, nixl_thread_sync_t  # noqa: E402 (after the plugin dir)

# a thread-safe agent: its lock is real (with NIXL_THREAD_SYNC_NONE it is not taken at all)
conf = nixl_agent_config(backends=[], sync_mode=nixl_thread_sync_t.NIXL_THREAD_SYNC_STRICT)
agent = nixl_agent(daoskit.unique_key("gil"), conf)
agent.create_backend("POSIX", {})
posix = agent.backends["POSIX"]
stop = threading.Event()
calls = [0]


def hammer():
    while not stop.is_set():
        agent.agent.getBackendParams(posix)  # the binding itself: the Python wrapper caches
        calls[0] += 1


t = threading.Thread(target=hammer, daemon=True)
t.start()
while calls[0] < 100:  # the other thread is in its loop
    time.sleep(0.001)
before = calls[0]
t0 = time.monotonic()
agent.create_backend(daoskit.BACKEND, {"evict": "false"} if not daoskit.TESTBED else {})
took = time.monotonic() - t0
stop.set()
t.join(10)
print(json.dumps({"created_in_s": round(took, 3), "calls_during": calls[0] - before, "joined": not t.is_alive()}))
