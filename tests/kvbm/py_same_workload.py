# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The workload of tests/kvbm's throughput test (tests/kvbm_obj.rs `throughput_offload_onboard`),
through the Python bindings of the NIXL wheel (.venv, nixl-cu12 1.5.1) on daos-sim, so that a cost
of the Rust path (nixl-sys over NIXL main) shows beside it: 4 batches x 16 blocks x 4 MiB (32
layers x 2 x 64 KiB), one request per batch, fresh keys, per block one OBJ registration made
before the post and dropped after it (as KVBM does), layer-separate (1024 descriptors per batch)
and fully contiguous (16), busy polling and a 50 ms sleep between status calls.

    .venv/bin/python tests/kvbm/py_same_workload.py     (from the repository root; ci/kvbm.sh runs it)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

import numpy as np  # noqa: E402

import daoskit  # noqa: E402

LAYERS, OUTER, REGION = 32, 2, 16 * 2048 * 2
BLOCK = LAYERS * OUTER * REGION
BATCHES, BATCH = 4, 16


def regions(bufs: list[np.ndarray], contiguous: bool, block: int) -> list[tuple[int, int, int]]:
    """DRAM (addr, len, 0) of a block's regions, in the object's (layer, outer) order."""
    if contiguous:
        return [(daoskit.addr(bufs[0], block * BLOCK), BLOCK, 0)]
    return [
        (daoskit.addr(bufs[layer], (block * OUTER + o) * REGION), REGION, 0)
        for layer in range(LAYERS)
        for o in range(OUTER)
    ]


def batch(agent, op: str, devs: list[int], bufs, contiguous: bool, poll: float) -> float:
    t0 = time.perf_counter()
    regs = [agent.agent.register_memory([(0, BLOCK, d, "")], "OBJ", backends=[daoskit.BACKEND]) for d in devs]
    local, remote = [], []
    for b, d in enumerate(devs):
        rs = regions(bufs, contiguous, b)
        local += rs
        off = 0
        for _, n, _ in rs:
            remote.append((off, n, d))
            off += n
    h, state = agent.post(op, local, remote)
    for r in regs:
        agent.agent.deregister_memory(r, backends=[daoskit.BACKEND])
    while state != "DONE":
        if state == "ERR":
            raise AssertionError("transfer failed")
        if poll:
            time.sleep(poll)
        state = agent.agent.check_xfer_state(h)
    agent.release(h)
    return time.perf_counter() - t0


def main() -> None:
    daoskit.prepare_environment()
    agent = daoskit.DaosAgent(
        "kvbm-py",
        {"bucket": daoskit.unique_key("kvbm-py"), "endpoint_override": "http://127.0.0.1:9000", "evict": "true"},
    )
    for contiguous in (False, True):
        n = BATCH * BLOCK
        if contiguous:
            src, dst = [daoskit.pattern(n, 1)], [np.zeros(n, np.uint8)]
        else:
            src = [daoskit.pattern(n // LAYERS, i) for i in range(LAYERS)]
            dst = [np.zeros(n // LAYERS, np.uint8) for _ in range(LAYERS)]
        for a in src + dst:
            agent.reg_dram(a)
        for poll in (0.0, 0.05):
            keys = [[daoskit.unique_dev_id() for _ in range(BATCH)] for _ in range(BATCHES)]
            put = sum(batch(agent, "WRITE", devs, src, contiguous, poll) for devs in keys)
            get = sum(batch(agent, "READ", devs, dst, contiguous, poll) for devs in keys)
            for s, d in zip(src, dst):
                daoskit.assert_same(d, s, "onboarded bytes")
            total = BATCHES * BATCH * BLOCK
            print(
                f"THROUGHPUT python/nixl-cu12 {'fully-contiguous' if contiguous else 'layer-separate':>16} "
                f"poll {'busy' if not poll else '50ms':>5}: {BATCHES} batches x {BATCH} blocks x {BLOCK >> 20} MiB "
                f"({BATCH * (1 if contiguous else LAYERS * OUTER)} descriptors/batch): "
                f"offload {total / put / 1e6:.0f} MB/s, onboard {total / get / 1e6:.0f} MB/s",
                flush=True,
            )
    agent.close()


if __name__ == "__main__":
    main()
