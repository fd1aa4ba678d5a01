# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The real DAOS pool the benchmarks run on (DAOS_POOL), through the `daos` tool (DAOS_LOCAL_BIN,
as `daos-local.sh env` sets it, or PATH): destroying a benchmark's container, waiting for the
pool's space before a measurement, explaining a failed run.

What a destroy leaves behind (DAOS 2.8, `daos-local.sh`, measured): `daos cont destroy` returns
at once and the pool's free space (`daos pool query`) is back at once, but the engine reclaims
the container's extents in the background for tens of seconds, on the CPUs the next measurement
needs, and until then the space cannot be written: right after destroying a 2.8 GiB container
of a 5.8 GB-free pool, 1.5 GB of new-key writes failed with DER_NOSPACE. The first contender
after the 1.9 GiB warm-up wrote new keys at 0.4-0.6x of the same RPCs run later (20 s of sleep
after the destroy did not help; 90 s mostly did). So the benchmarks do not trust a wait on the
free space: kv_bench.py runs each workload in passes over its contenders in a balanced order
(kv_passes.order) and keeps the fastest rep.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time


def daos_tool() -> str | None:
    for t in (os.path.join(os.environ.get("DAOS_LOCAL_BIN", ""), "daos"), shutil.which("daos")):
        if t and os.access(t, os.X_OK):
            return t
    return None


def create_container(label: str) -> None:
    """`daos cont create DAOS_POOL label` (for a backend that opens but does not create its
    container); an error naming the tool's answer when it cannot."""
    pool, tool = os.environ.get("DAOS_POOL", ""), daos_tool()
    if tool is None:
        raise RuntimeError("no `daos` tool (DAOS_LOCAL_BIN or PATH) to create a container with")
    r = subprocess.run([tool, "cont", "create", pool, label], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(
            f"daos cont create {pool} {label}: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}"
        )


def destroy_container(label: str) -> None:
    """`daos cont destroy --force`; a warning (not an error) when it cannot."""
    pool, tool = os.environ.get("DAOS_POOL", ""), daos_tool()
    if tool is None:
        print(f"  warning: no `daos` tool: container {label} stays in pool {pool}")
        return
    r = subprocess.run([tool, "cont", "destroy", "--force", pool, label], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"  warning: daos cont destroy {pool} {label}: {r.stdout.strip()} {r.stderr.strip()}")


def pool_space() -> tuple[int, int] | None:
    """(total, free) bytes of DAOS_POOL's first tier (`daos pool query -j`), None when unknown. Free
    as the plugin's eviction sees it: the fullest target's free bytes times the targets (a write
    to a full target is refused however much the others hold; on 2 targets, 3 MB against 43 MB
    was seen), not the sum over the targets."""
    pool, tool = os.environ.get("DAOS_POOL", ""), daos_tool()
    if tool is None or not pool:
        return None
    r = subprocess.run([tool, "pool", "query", pool, "-j"], capture_output=True, text=True)
    try:
        resp = json.loads(r.stdout[r.stdout.index("{") :])["response"]
        tier = (resp.get("tier_stats") or [{}])[0]
        free, targets = int(tier["free"]), int(resp.get("active_targets") or resp.get("total_targets") or 0)
        if "min" in tier and targets > 0:
            free = min(free, int(tier["min"]) * targets)
        return int(tier["total"]), free
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):  # AttributeError: "response": null
        return None


def wait_for_space(need: int, what: str, timeout_s: float = 180.0) -> None:
    """Waits, up to `timeout_s`, until DAOS_POOL has `need` bytes free beyond the plugin's
    eviction reserve (10%). Files unlinked on a dfuse mount give their space back only as the
    engine aggregates (measured here: a pool at 0.0 of 6.4 GB free right after the dfuse
    contender's first pass deleted its files), so the next measurement would run into a full
    pool: NIXL POSIX's writes come back short, and the plugin evicts the measurement's own keys.
    Prints a line when it waited; measures nothing (outside every clock)."""
    t0, slept = time.monotonic(), False
    while True:
        sp = pool_space()
        if sp is None:
            return
        total, free = sp
        if free >= need + total // 10:
            if slept:  # a query alone takes about a second: only a real wait is worth a line
                print(f"  {what}: waited {time.monotonic() - t0:.0f} s for the pool's space ({free / 1e9:.1f} GB free)")
            return
        if time.monotonic() - t0 > timeout_s:
            print(
                f"  warning: {what}: the pool has {free / 1e9:.1f} of {total / 1e9:.1f} GB free after "
                f"{timeout_s:.0f} s, {(need + total // 10) / 1e9:.1f} GB wanted: measuring anyway"
            )
            return
        time.sleep(2)
        slept = True


def space_hint() -> str:
    """After a real run failed: the pool's free space now, and why it matters. With evict=true
    (the plugin's default) a pool that runs short makes the plugin punch its oldest keys, and in
    a benchmark's fresh container those are the benchmark's own, so a later read fails as a miss
    ("does not exist" in the plugin's log) rather than the run stopping at a full pool."""
    sp = pool_space()
    now = f"pool {os.environ.get('DAOS_POOL', '')}: {sp[1] / 1e9:.1f} of {sp[0] / 1e9:.1f} GB free now" if sp else ""
    return (
        f"{now + '; ' if now else ''}if the plugin's log says a key written by this run 'does not exist', the pool "
        "ran short and the plugin evicted the run's oldest keys (evict=true, keeping evict_keep_free percent free; "
        "NIXL_LOG_LEVEL=INFO shows the eviction lines; a destroyed container's space comes back only tens of seconds "
        "later): give the run a larger pool (ci/bench.sh starts one of 10 GiB) or a smaller --scale/--real-warmup-gib"
    )
