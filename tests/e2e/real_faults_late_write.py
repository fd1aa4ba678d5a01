# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Consumers of tests/e2e/test_real_faults.py's late-write test, one process each:

  writer <engine_pid> <key>   writes the key (v1), stops the engine (SIGSTOP), posts a WRITE of
                              v2 that times out (1 s), refills its buffer, resumes the engine
                              (SIGCONT) so that DAOS applies the late write, and waits.
  reader <key> <seconds>      reads the key every 20 ms from its own process meanwhile, and
                              counts what each read was: a miss, v1, v2 (as posted) or anything
                              else (the refill, or a mix: wrong).

Each prints one JSON line."""

import json
import os
import signal
import sys
import time

import daoskit
from daoskit import addr, np

SIZE = 1 << 20
V1, V2, REFILL = 1, 2, 0xEE


def writer(engine_pid: int, key: str) -> dict:
    a = daoskit.DaosAgent(params={"timeout_ms": 1000})
    v1 = daoskit.pattern(SIZE, V1)
    dev = a.put(key, v1)
    buf = daoskit.pattern(SIZE, V2)
    a.reg_dram(buf)
    time.sleep(1.0)  # the reader sees v1 for a while
    os.kill(engine_pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        h, st = a.post("WRITE", [(addr(buf), SIZE, 0)], [(0, SIZE, dev)])
        try:
            a.wait(h, st, timeout=30)
            outcome = "DONE"
        except daoskit.nixl_errors():
            outcome = "ERR"
        failed_s = time.monotonic() - t0
        buf[:] = REFILL  # what LMCache does with a failed store's buffer: reuse it
        time.sleep(0.5)
    finally:
        os.kill(engine_pid, signal.SIGCONT)
    t_cont = time.time()
    a.release(h)
    time.sleep(3.0)  # DAOS applies the held write; the reader keeps reading
    return {"outcome": outcome, "failed_s": failed_s, "t_cont": t_cont}


def reader(key: str, seconds: float) -> dict:
    a = daoskit.DaosAgent(params={"read_timeout_ms": 500})
    dev = a.reg_obj(key, SIZE)
    v1, v2 = daoskit.pattern(SIZE, V1), daoskit.pattern(SIZE, V2)
    buf = np.zeros(SIZE, np.uint8)
    a.reg_dram(buf)
    counts = {"miss": 0, "v1": 0, "v2": 0, "wrong": 0}
    first_v2 = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        buf[:] = 0
        try:
            a.xfer("READ", [(addr(buf), SIZE, 0)], [(0, SIZE, dev)], timeout=10)
        except daoskit.nixl_errors():
            counts["miss"] += 1
        else:
            if np.array_equal(buf, v1):
                counts["v1"] += 1
            elif np.array_equal(buf, v2):
                counts["v2"] += 1
                first_v2 = first_v2 or time.time()
            else:
                counts["wrong"] += 1
        time.sleep(0.02)
    return counts | {"first_v2": first_v2}


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        out = writer(int(sys.argv[2]), sys.argv[3])
    else:
        out = reader(sys.argv[2], float(sys.argv[3]))
    print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)
