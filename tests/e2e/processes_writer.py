# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Writer of tests/e2e/test_processes.py. argv: key prefix, number of keys, bytes per key, seed
of the first key. Prints one JSON line."""

import json
import sys

import daoskit

prefix, n, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
a = daoskit.DaosAgent()
for i in range(n):
    a.put(f"{prefix}-{i}", daoskit.pattern(size, seed + i))
a.close()
print(json.dumps({"written": n}))
