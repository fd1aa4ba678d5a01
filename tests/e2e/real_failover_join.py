# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Second agent of tests/e2e/real_failover.py: a new process joins the pool while an engine is
down. argv[1]: backend parameters (JSON), argv[2]: devIds to read (JSON); the data of each is
rebuilt from the seed in $NIXL_DAOS_FAILOVER_KEYS. Prints one JSON line: create_backend's
seconds and outcome, the object id the plugin uses, and each read's outcome."""

import json
import os
import sys
import time

import daoskit
from daoskit import addr, np
from real_faults_common import ERRS

SIZE = 256 << 10
params, devs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
seeds = json.load(open(os.environ.get("NIXL_DAOS_FAILOVER_KEYS", "/tmp/nixl-daos-failover-keys.json")))
out: dict = {}
t = time.monotonic()
try:
    a = daoskit.DaosAgent(params=params)
    out["create"] = "created"
except ERRS as e:
    out["create"] = "refused: " + str(e)[:300]
    a = None
out["create_s"] = time.monotonic() - t
reads = []
if a is not None:
    for dev in devs:
        buf = np.zeros(SIZE, np.uint8)
        a.reg_dram(buf)
        a.reg_obj("", SIZE, dev)
        t = time.monotonic()
        try:
            h, st = a.post("READ", [(addr(buf), SIZE, 0)], [(0, SIZE, dev)])
            a.wait(h, st, timeout=60)
            reads.append(
                ("ok" if bool((buf == daoskit.pattern(SIZE, seeds[str(dev)])).all()) else "WRONG", time.monotonic() - t)
            )
        except (*ERRS, daoskit.TransferTimeout) as e:
            reads.append((type(e).__name__, time.monotonic() - t))
out["reads"] = reads
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
