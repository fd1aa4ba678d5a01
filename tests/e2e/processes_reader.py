# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Reader of tests/e2e/test_processes.py. argv: JSON list of [prefix, n, size, seed]; reads and
checks every key, queries them; prints one JSON line."""

import json
import sys

import daoskit

sets = json.loads(sys.argv[1])
a = daoskit.DaosAgent()
bad, sizes, keys = [], [], []
for prefix, n, size, seed in sets:
    for i in range(n):
        key = f"{prefix}-{i}"
        keys.append((key, size))
        got = a.get(a.reg_obj(key, size), size)
        if not (got == daoskit.pattern(size, seed + i)).all():
            bad.append(key)
res = a.query([k for k, _ in keys] + [daoskit.unique_key("never")])
sizes = [None if r is None else int(r["size"]) for r in res]
a.close()
print(json.dumps({"bad": bad, "sizes": sizes, "want": [s for _, s in keys] + [None]}))
