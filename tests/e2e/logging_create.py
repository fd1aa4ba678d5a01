# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Child of tests/e2e/test_logging.py: creates a DAOS backend twice with the parameters given as
JSON in argv[1], printing "created" or "refused" per attempt; the test reads the plugin's log."""

import json
import sys

import daoskit

daoskit.prepare_environment()
params = json.loads(sys.argv[1])
for _ in range(2):
    try:
        a = daoskit.DaosAgent(params=params)
        print("created", flush=True)
        a.close()
    except daoskit.backend_error():
        print("refused", flush=True)
