# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Consumer of tests/e2e/test_real_faults.py: writes until the pool is full (argv[1]: pool,
argv[2]: the daos tools' dir). Prints one JSON line."""

import gc
import json
import os
import subprocess
import sys
import time

import daoskit
from real_faults_common import ERRS

# A pool too small for what is written into it, with eviction off (on, the filler would evict
# its own keys and keep writing: tests/e2e/test_real_evict.py): writes fail with a message
# naming the pool and what to do; once another container's space is freed, the same backend
# writes again.
pool, daos_bin = sys.argv[1], sys.argv[2]
size = 8 << 20
data = daoskit.pattern(size)
common = {"pool": pool, "create_container": "true", "evict": "false"}
filler = daoskit.DaosAgent(params={**common, "container": "filler"})
kv = daoskit.DaosAgent(params={**common, "container": "kv"})
kv.put(daoskit.unique_key("before"), data[:4096])
filled, full_error = 0, None
for _ in range(200):
    try:
        filler.put(daoskit.unique_key("fill"), data)
        filled += 1
    except ERRS as e:
        full_error = type(e).__name__
        break
try:
    kv.put(daoskit.unique_key("while-full"), data)
    kv_while_full = "written"
except ERRS:
    kv_while_full = "refused"
filler.close()
filler.agent = None
del filler
gc.collect()
freed = subprocess.run(
    [daos_bin + "/daos", "cont", "destroy", "--force", pool, "filler"], capture_output=True, text=True, timeout=120
)
after, t = "refused", time.monotonic()
while time.monotonic() - t < 30:  # DAOS reclaims the space asynchronously
    try:
        dev = kv.put(daoskit.unique_key("after"), data)
        after = "written" if (kv.get(dev, size) == data).all() else "corrupt"
        break
    except ERRS:
        time.sleep(1)
kv.close()
print(
    json.dumps(
        {
            "filled": filled,
            "full_error": full_error,
            "kv_while_full": kv_while_full,
            "freed_rc": freed.returncode,
            "after": after,
        }
    )
)
sys.stdout.flush()
os._exit(0)
