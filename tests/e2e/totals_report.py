# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Child of tests/e2e/test_logging.py: moves a known set of keys through one DAOS backend (two
keys written in one request, one of them read back, a missing key read) and exits without
closing the agent, as vLLM and LMCache do; the test reads the totals the plugin appended to
$NIXL_DAOS_STATS_FILE at exit."""

import daoskit

a = daoskit.DaosAgent()
n = 4096
data = daoskit.pattern(2 * n)
a.reg_dram(data)
k1, k2 = daoskit.unique_key("tot"), daoskit.unique_key("tot")
d1, d2 = a.reg_obj(k1, n), a.reg_obj(k2, n)
a.xfer("WRITE", [(daoskit.addr(data), n, 0), (daoskit.addr(data, n), n, 0)], [(0, n, d1), (0, n, d2)])
daoskit.assert_same(a.get(d2, n), data[n:], "key 2")
missing = a.reg_obj(daoskit.unique_key("absent"), n)
try:
    a.get(missing, n)
    raise SystemExit("a read of a key never written succeeded")
except daoskit.nixl_errors():
    pass
print("moved", flush=True)
