# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""DAOS's own container checksums against none, with the plugin's records and block checksums
on in both: new-key writes and reads of `--keys` values of `--mib` MiB, every key in flight,
the two containers in turn for `--rounds` rounds (best GB/s of each). On DAOS_POOL through
NIXL_DAOS_LIBDAOS (a real engine), containers made with the `daos` tool and destroyed after.

    python -m bench.cont_cksum [--keys 40 --mib 4 --rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
import uuid

import numpy as np

from bench import real_pool
from bench.testbed import use_real_pool

use_real_pool()  # before daoskit reads NIXL_DAOS_TESTBED at its import
from tests.e2e import daoskit  # noqa: E402

PROPS = {"none": "", "cksum": "cksum:crc32,srv_cksum:on"}


def make(label: str, props: str) -> None:
    cmd = [real_pool.daos_tool(), "cont", "create", os.environ["DAOS_POOL"], label]
    if props:
        cmd += ["--properties", props]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def one(kind: str, keys: int, size: int, src: np.ndarray, dst: np.ndarray) -> tuple[float, float]:
    label = f"cksum-{kind}-{uuid.uuid4().hex[:8]}"
    make(label, PROPS[kind])
    try:
        a = daoskit.DaosAgent(params={"container": label})
        a.reg_dram(src)
        a.reg_dram(dst)
        devs = [a.reg_obj("", size) for _ in range(keys)]
        rates = []
        for op, buf in (("WRITE", src), ("READ", dst)):
            t0 = time.monotonic()
            hs = [a.post(op, [(daoskit.addr(buf, i * size), size, 0)], [(0, size, d)]) for i, d in enumerate(devs)]
            for h, st in hs:
                a.wait(h, st, timeout=120)
                a.release(h)
            rates.append(keys * size / (time.monotonic() - t0) / 1e9)
        assert np.array_equal(src, dst), "read back wrong"
        a.agent = None
        return rates[0], rates[1]
    finally:
        real_pool.destroy_container(label)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=40)
    ap.add_argument("--mib", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    size = a.mib << 20
    src = daoskit.pattern(a.keys * size, 7)
    dst = np.zeros(a.keys * size, np.uint8)
    best = {k: [0.0, 0.0] for k in PROPS}
    for r in range(a.rounds):
        for kind in PROPS if r % 2 == 0 else reversed(list(PROPS)):
            w, rd = one(kind, a.keys, size, src, dst)
            best[kind] = [max(best[kind][0], w), max(best[kind][1], rd)]
            print(f"round {r} {kind:6s} write {w:.3f} GB/s  read {rd:.3f} GB/s", flush=True)
    n, c = best["none"], best["cksum"]
    print(
        f"{a.keys} keys x {a.mib} MiB, best of {a.rounds}: container checksums off {n[0]:.3f} / {n[1]:.3f} GB/s, "
        f"on (crc32, srv_cksum) {c[0]:.3f} / {c[1]:.3f} GB/s write / read: {c[0] / n[0]:.2f}x / {c[1] / n[1]:.2f}x"
    )


if __name__ == "__main__":
    main()
