# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Scenario of tests/e2e/test_safety.py, run in a subprocess by test_prepped_obj_list_after_deregistration:
A prepped OBJ list used after its deregistration. Prints its findings as one JSON line."""

import json

import daoskit
from daoskit import addr, pattern, unique_key

daoskit.prepare_environment()
sim = daoskit.Sim()
d = daoskit.DaosAgent()
size = 4096
dev = d.reg_obj(unique_key("gone"), size)
src = pattern(size, 10)
d.reg_dram(src)
lh = d.prep_dram([(addr(src), size, 0)])
rh = d.prep_obj([(0, size, dev)])
d.dereg_obj(dev)
others = [d.reg_obj(unique_key("other"), size) for _ in range(8)]
try:
    d.prepped("WRITE", lh, [0], rh, [0], timeout=5)
    stale = "succeeded"
except daoskit.nixl_errors():
    stale = "failed"
written = 0
for o in others:
    try:
        d.get(o, size)
        written += 1
    except daoskit.nixl_errors():
        pass
print(json.dumps({"stale": stale, "written": written}))
