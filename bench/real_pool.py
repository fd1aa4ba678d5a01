# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The real DAOS pool the benchmarks run on (DAOS_POOL), through the `daos` tool (DAOS_LOCAL_BIN,
as `daos-local.sh env` sets it, or PATH): destroying a benchmark's container.

What a destroy leaves behind (DAOS 2.8, `daos-local.sh`, measured): `daos cont destroy` returns
at once and the pool's free space (`daos pool query`) is back at once, but the engine reclaims
the container's extents in the background for tens of seconds, on the CPUs the next measurement
needs, and until then the space cannot be written: right after destroying a 2.8 GiB container
of a 5.8 GB-free pool, 1.5 GB of new-key writes failed with DER_NOSPACE. The first contender
after the 1.9 GiB warm-up wrote new keys at 0.4-0.6x of the same RPCs run later (20 s of sleep
after the destroy did not help; 90 s mostly did). So the benchmarks do not trust a wait on the
free space: fold_policy.py interleaves its policies, kv_bench.py runs its contenders in two
passes (the second in reverse) and keeps the fastest rep.
"""

from __future__ import annotations

import os
import shutil
import subprocess


def daos_tool() -> str | None:
    for t in (os.path.join(os.environ.get("DAOS_LOCAL_BIN", ""), "daos"), shutil.which("daos")):
        if t and os.access(t, os.X_OK):
            return t
    return None


def destroy_container(label: str) -> None:
    """`daos cont destroy --force`; a warning (not an error) when it cannot."""
    pool, tool = os.environ.get("DAOS_POOL", ""), daos_tool()
    if tool is None:
        print(f"  warning: no `daos` tool: container {label} stays in pool {pool}")
        return
    r = subprocess.run([tool, "cont", "destroy", "--force", pool, label], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"  warning: daos cont destroy {pool} {label}: {r.stdout.strip()} {r.stderr.strip()}")
