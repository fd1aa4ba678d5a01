# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The machine's load over a benchmark run, recorded in the results JSON of every benchmark here
(key "load") and printed above its table: the 1/5/15-minute load average (os.getloadavg()) and
the CPU count (os.cpu_count(); the CPUs this process may use beside it) at the start and at the
end of the run, and the highest 1-minute load average sampled during the run.

A run is CONTENDED when that load exceeded the machine's CPU count (RULE): more threads wanted a
CPU than there were, so the run's threads waited for one and its clock measured the share of
the machine it got. The run's own threads count in the load average too; the record gives the
cores the run kept busy on average beside it (the CPU time of this process and of the child
processes it waited for, over the wall time).
"""

from __future__ import annotations

import os
import threading
import time

SAMPLE_S = 5.0
RULE = (
    "CONTENDED when the 1-minute load average, sampled every 5 s during the run and at its end, "
    "exceeded the machine's CPU count (the run's own threads count in it)"
)


def _cpu() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def snapshot() -> dict:
    """The load average and CPU count now."""
    return {
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count() or 1,
        "cpus_usable": len(os.sched_getaffinity(0)),
    }


class LoadWatch:
    """Takes the start snapshot when made; a daemon thread samples the 1-minute load average
    every `every` seconds until stop(), which returns the record (the same one on every call)."""

    def __init__(self, every: float = SAMPLE_S):
        self.start = snapshot()
        self._t0, self._cpu0 = time.perf_counter(), _cpu()
        self._peak, self._samples = 0.0, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), name="load-watch", daemon=True)
        self._thread.start()
        self._record: dict | None = None

    def _run(self, every: float) -> None:
        while not self._done.wait(every):
            self._sample()

    def _sample(self) -> None:
        self._peak = max(self._peak, os.getloadavg()[0])
        self._samples += 1

    def stop(self) -> dict:
        if self._record is None:
            self._done.set()
            self._thread.join()
            self._sample()  # the end counts
            end = snapshot()
            wall = time.perf_counter() - self._t0
            cpus = end["cpus"]
            peak = round(max(self._peak, end["loadavg"][0]), 2)
            self._record = {
                "start": self.start,
                "end": end,
                "peak_1min": peak,
                "samples": self._samples,
                "seconds": round(wall, 1),
                "own_cores_busy": round((_cpu() - self._cpu0) / wall, 2) if wall > 0 else None,
                "cpus": cpus,
                "contended": peak > cpus,
                "rule": RULE,
            }
        return self._record


def _avg(s: dict) -> str:
    return "/".join(f"{x:.2f}" for x in s["loadavg"])


def describe_start(s: dict) -> str:
    return f"load average 1/5/15 min {_avg(s)} on {s['cpus']} CPUs ({s['cpus_usable']} usable here)"


def verdict(rec: dict | None) -> str:
    """'CONTENDED (...)' or 'not contended (...)': the rule applied to one run's record."""
    if not rec:
        return "load not recorded"
    busy = rec.get("own_cores_busy")
    own = f"; the run's processes kept {busy:.2f} cores busy" if busy is not None else ""
    if rec["contended"]:
        return f"CONTENDED (peak 1-min load {rec['peak_1min']:.2f} > {rec['cpus']} CPUs{own})"
    return f"not contended (peak 1-min load {rec['peak_1min']:.2f} <= {rec['cpus']} CPUs{own})"


def describe(rec: dict | None) -> str:
    """One line: the load at the start and at the end, the CPU counts, and the verdict."""
    if not rec:
        return "machine load: not recorded"
    s, e = rec["start"], rec["end"]
    cpus = f"{s['cpus']} CPUs" if s["cpus"] == e["cpus"] else f"{s['cpus']} CPUs at the start, {e['cpus']} at the end"
    return (
        f"machine load (1/5/15-min load average): {_avg(s)} at the start, {_avg(e)} at the end "
        f"({rec['seconds']:.0f} s later), {cpus} ({e['cpus_usable']} usable here): {verdict(rec)}"
    )
