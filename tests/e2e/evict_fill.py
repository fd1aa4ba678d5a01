# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Fills a pool with new KV keys through NIXL and reads them back: the workload of the eviction
tests on a real engine (tests/e2e/test_real_evict.py), also a benchmark of writes with eviction
active against the same writes into the still-empty pool (first third against last third).

argv: key prefix, keys, bytes per key, requests in flight, read back (0/1); backend parameters
as JSON in NIXL_DAOS_FILL_PARAMS (default: none, the plugin's defaults). With
NIXL_DAOS_FILL_BARRIER=DIR:COUNT, the read-back waits until COUNT writers have finished writing
(each leaves a file in DIR), so that what a reader finds is judged after every write.
Prints one JSON line: writes attempted and succeeded (per third), GB/s per third, then, when
reading back, keys present (every byte verified), missing (a clean miss: the read failed and
queryMem says None), wrong (a read that succeeded with other bytes: must be 0), mismatches (a
miss that queryMem still reports), how many of the newest 5% of keys were written and are
present, and per key when its write succeeded (CLOCK_MONOTONIC, the same clock in every process
of the host; null if it failed) and whether it read back right (`written_at`, `present_at`), for
judging recency across processes."""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import daoskit

prefix, n, size, window, read_back = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
params = json.loads(os.environ.get("NIXL_DAOS_FILL_PARAMS", "{}"))
a = daoskit.DaosAgent(params=params)
BASES = [daoskit.pattern(size, seed=s) for s in range(16)]
STAMP = 64 * 1024


def content(i: int, out: np.ndarray) -> None:
    """Key i's bytes: a base pattern with i stamped every 64 KiB, so that bytes of another key
    (or of no key) anywhere in the value show."""
    out[:] = BASES[i % len(BASES)]
    stamp = np.frombuffer(np.uint64(i).tobytes() * 1, dtype=np.uint8)
    for off in range(0, size - 8 + 1, STAMP):
        out[off : off + 8] = stamp


slots = [np.zeros(size, dtype=np.uint8) for _ in range(window)]
for s in slots:
    a.reg_dram(s)
devs = [a.reg_obj(f"{prefix}/{i}", size) for i in range(n)]
ok = [False] * n
done_at = [0.0] * n
written_at = [None] * n  # CLOCK_MONOTONIC: one clock for every process of the host, never stepped
inflight = []  # (key index, handle, state)
t0 = time.monotonic()


def settle(j: int, h, st) -> None:
    try:
        a.wait(h, st, timeout=120)
        ok[j] = True
        written_at[j] = time.monotonic()
    except daoskit.backend_error():
        pass
    finally:
        a.release(h)
        done_at[j] = time.monotonic() - t0


barrier = os.environ.get("NIXL_DAOS_FILL_BARRIER")
if barrier:
    where, count = barrier.rsplit(":", 1)
    barrier_dir, barrier_count = Path(where), int(count)


def arrive() -> None:
    """This writer has finished writing (or failed): the others need not wait for it."""
    if barrier:
        (barrier_dir / prefix.replace("/", "_")).touch()


try:
    for i in range(n):
        slot = i % window
        if len(inflight) == window:
            settle(*inflight.pop(0))
        content(i, slots[slot])
        h, st = a.post("WRITE", [(daoskit.addr(slots[slot]), size, 0)], [(0, size, devs[i])])
        inflight.append((i, h, st))
    for j, h, st in inflight:
        settle(j, h, st)
finally:
    arrive()
thirds = [(0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)]
out = {"attempted": n, "succeeded": sum(ok), "seconds": time.monotonic() - t0}
out["succeeded_by_third"] = [sum(ok[lo:hi]) for lo, hi in thirds]
out["attempted_by_third"] = [hi - lo for lo, hi in thirds]
gbps = []
for lo, hi in thirds:
    start = done_at[lo - 1] if lo > 0 else 0.0
    secs = max(done_at[hi - 1] - start, 1e-9)
    gbps.append(sum(ok[lo:hi]) * size / secs / 1e9)
out["gbps_by_third"] = gbps
if barrier:
    deadline = time.monotonic() + 600
    while len(list(barrier_dir.iterdir())) < barrier_count:
        if time.monotonic() > deadline:
            sys.exit(f"the other writers did not finish within 600 s ({barrier_dir})")
        time.sleep(0.2)
if read_back == "1":
    present_at = [False] * n
    present = missing = wrong = mismatch = 0
    recent_from = n - max(n // 20, 1)  # the newest 5%: eviction takes the oldest first
    got = slots[0]
    want = np.zeros(size, dtype=np.uint8)
    t_read = time.monotonic()
    for i in range(n):
        got[:] = 0
        try:
            a.xfer("READ", [(daoskit.addr(got), size, 0)], [(0, size, devs[i])], timeout=120)
        except daoskit.backend_error():
            missing += 1
            if a.query([f"{prefix}/{i}"])[0] is not None:
                mismatch += 1
            continue
        content(i, want)
        if np.array_equal(got, want):
            present += 1
            present_at[i] = True
        else:
            wrong += 1
    # One read at a time (a KV fetch on the critical path), verification included.
    out["read_gbps"] = present * size / max(time.monotonic() - t_read, 1e-9) / 1e9
    out.update(present=present, missing=missing, wrong=wrong, mismatch=mismatch)
    # Of those, the ones whose WRITE succeeded: a write refused for space while eviction caught
    # up is no eviction's doing.
    out.update(
        recent_present=sum(present_at[recent_from:]), recent_of=n - recent_from, recent_written=sum(ok[recent_from:])
    )
    out.update(written_at=written_at, present_at=present_at)
a.close()
print(json.dumps(out))
