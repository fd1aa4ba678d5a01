# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""What a fresh process pays for its staging buffers: one backend writes `--keys` new keys of
`--mib` MiB, every key in flight, then reads them `--rounds` times; each round's GB/s and page
faults. The first read meets new staging memory (a fresh process's), the later ones reuse it.
On DAOS_POOL through NIXL_DAOS_LIBDAOS (a real engine); a container of its own, destroyed after.

    python -m bench.first_reads [--stage-bytes 67108864] [--prev] [--keys 60 --mib 8 --rounds 3]

--prev: the build bench/prev.sh made (NIXL_DAOS_PREV_PLUGIN, backend DAOSPREV) instead of this one.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
import uuid

import numpy as np

from bench import real_pool
from bench.testbed import use_real_pool

use_real_pool()  # before daoskit reads NIXL_DAOS_TESTBED at its import
from tests.e2e import daoskit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage-bytes", type=int, default=None, help="the plugin's stage_bytes (default: its own)")
    ap.add_argument("--prev", action="store_true", help="the plugin bench/prev.sh built (NIXL_DAOS_PREV_PLUGIN)")
    ap.add_argument("--keys", type=int, default=60)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    label = f"first-reads-{uuid.uuid4().hex[:8]}"
    params = {"container": label, "create_container": "true"}
    if a.stage_bytes:
        params["stage_bytes"] = str(a.stage_bytes)
    if a.prev:
        d = tempfile.mkdtemp(prefix="nixl-daos-prev-")
        os.symlink(os.environ["NIXL_DAOS_PREV_PLUGIN"], os.path.join(d, "libplugin_DAOSPREV.so"))
        daoskit._plugin_dir = d
        daoskit.BACKEND = "DAOSPREV"
    size = a.mib << 20
    src = daoskit.pattern(a.keys * size, 3)
    dst = np.zeros(a.keys * size, np.uint8)
    try:
        agent = daoskit.DaosAgent(params=params)
        agent.reg_dram(src)
        agent.reg_dram(dst)
        devs = [agent.reg_obj("", size) for _ in range(a.keys)]
        for rnd, (op, buf) in enumerate([("WRITE", src)] + [("READ", dst)] * a.rounds):
            faults, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.monotonic()
            hs = [agent.post(op, [(daoskit.addr(buf, i * size), size, 0)], [(0, size, d)]) for i, d in enumerate(devs)]
            for h, st in hs:
                agent.wait(h, st, timeout=120)
                agent.release(h)
            gbps = a.keys * size / (time.monotonic() - t0) / 1e9
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            print(
                f"{daoskit.BACKEND} stage_bytes {a.stage_bytes or 'default'}: {op.lower()} {rnd}: "
                f"{gbps:.2f} GB/s, {faults} page faults",
                flush=True,
            )
        assert np.array_equal(src, dst), "read back wrong"
        agent.agent = None
    finally:
        real_pool.destroy_container(label)


if __name__ == "__main__":
    main()
