# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_faults.py, run in a subprocess by
test_exit_with_a_connect_past_its_deadline: create_backend is refused at its deadline while the
pool connect it started is still inside libdaos (daos-sim's `connect_delay`, as a connect to a
dead pool-service replica waits for CaRT's timeout), then the process exits with status 7.
daos-sim aborts if the libraries' destructors run under that connect, as the real client
crashes then. Argument: "exit" (sys.exit) or "fall" (falls off the end; status 0)."""

import sys
import time

import daoskit

daoskit.prepare_environment()
sim = daoskit.Sim()
sim.control("connect_delay 4000")
t0 = time.monotonic()
try:
    daoskit.DaosAgent(params={"timeout_ms": 300})
    print("created", flush=True)
except daoskit.nixl_errors() as e:
    print(f"refused after {time.monotonic() - t0:.2f} s: {type(e).__name__}", flush=True)
print("last line of output", flush=True)
if sys.argv[1:] == ["exit"]:
    sys.exit(7)
