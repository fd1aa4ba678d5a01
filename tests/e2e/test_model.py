# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Randomized, seeded model check through the real NIXL agent against daos-sim.

Several agents (one dkey per key, and keys of two chunks), several threads each, random
writes, overwrites, reads (in range, past the end, unsorted descriptors, into a buffer a failed
read left), queries and releases in flight, while a fault thread switches sim faults on and off
at random moments (injected DER errors, hang then resume, latency). Every successful read is
compared byte for byte with a model of what each key may hold: the value of its last successful
WRITE, or of a WRITE that failed and may still land, each whole; a failure is accepted only
where a fault, a read past the end or such a failed write explains it.

Short by default (about a minute in ci/test.sh). NIXL_DAOS_MODEL_SECONDS=<s> runs longer,
NIXL_DAOS_MODEL_SEED=<n> replays a seed (the seed is printed on failure).
"""

from __future__ import annotations

import os
import random
import threading
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from daoskit import addr, nixl_errors, unique_key

KiB = 1 << 10
SECONDS = float(os.environ.get("NIXL_DAOS_MODEL_SECONDS", "40"))
SEED = int(os.environ.get("NIXL_DAOS_MODEL_SEED", str(random.SystemRandom().randrange(1 << 30))))
# Generous against a loaded CI machine (a request must not miss it without a fault); hangs
# run from well below it to above it.
TIMEOUT_MS = 2000
KEY_SPACE = 96 * KiB  # offsets of a key lie in [0, KEY_SPACE)
BUF = 128 * KiB
# A failure within this long after a fault ended is still explained by it: a request posted
# under a hang may time out after the resume.
FAULT_TAIL = (TIMEOUT_MS / 1000) * 2 + 0.5


class Faults:
    """When faults were on, to decide whether a failure is explained."""

    def __init__(self):
        self.lock = threading.Lock()
        self.windows: list[list[float]] = []  # [start, end or inf]

    def begin(self) -> list[float]:
        w = [time.monotonic(), float("inf")]
        with self.lock:
            self.windows.append(w)
        return w

    def end(self, w: list[float]) -> None:
        with self.lock:
            w[1] = time.monotonic()

    def explains(self, t0: float, t1: float) -> bool:
        with self.lock:
            return any(s <= t1 and t0 <= e + FAULT_TAIL for s, e in self.windows)


@dataclass
class Key:
    """What one key may hold: one of `values`, each the whole value of one WRITE (the last one
    that succeeded first, then those that failed since it and may still land, with when they
    failed). `sure`: nothing failed that may still land."""

    name: str
    dev: int
    values: list = field(default_factory=list)
    pending: list = field(default_factory=list)  # (value, failed at)

    @property
    def sure(self) -> bool:
        return not self.pending

    @property
    def candidates(self) -> list:
        return self.values + [v for v, _ in self.pending]

    @property
    def end(self) -> int:
        """Bytes every value it may hold has (0: it may hold none)."""
        c = self.candidates
        return min(len(v) for v in c) if c and self.values else 0

    @property
    def max_end(self) -> int:
        return max((len(v) for v in self.candidates), default=0)


class Worker:
    def __init__(self, agent, faults: Faults, rng: random.Random, failures: list, stats: dict):
        self.a = agent
        self.faults = faults
        self.rng = rng
        self.failures = failures
        self.stats = stats
        self.src = np.frombuffer(rng.randbytes(BUF), np.uint8).copy()
        self.dst = np.zeros(BUF, np.uint8)
        self.rel = np.zeros(KEY_SPACE, np.uint8)  # target of releases in flight
        agent.reg_dram(self.src)
        agent.reg_dram(self.dst)
        agent.reg_dram(self.rel)
        self.keys = [Key(name=unique_key("model"), dev=0) for _ in range(4)]
        for k in self.keys:
            k.dev = agent.reg_obj(k.name, KEY_SPACE)

    def note(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1

    def bad(self, msg: str) -> None:
        self.failures.append(msg)

    # ---- operations ----
    def pieces(self, start: int, end: int, n: int) -> list[tuple[int, int]]:
        cuts = sorted(self.rng.sample(range(start + 1, end), min(n - 1, max(0, end - start - 1))))
        bounds = [start, *cuts, end]
        ps = [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(len(bounds) - 1)]
        self.rng.shuffle(ps)  # unsorted descriptors
        return ps

    def write(self, k: Key) -> None:
        # A WRITE sets the whole value: descriptors covering [0, end), unsorted.
        end = self.rng.randrange(1, KEY_SPACE + 1)
        ps = self.pieces(0, end, self.rng.randrange(1, 5))
        src_at = [self.rng.randrange(0, BUF - ln) for _, ln in ps]
        value = np.zeros(end, np.uint8)
        for s, (off, ln) in zip(src_at, ps):
            value[off : off + ln] = self.src[s : s + ln]
        local = [(addr(self.src, s), ln, 0) for s, (_, ln) in zip(src_at, ps)]
        remote = [(off, ln, k.dev) for off, ln in ps]
        t0 = time.monotonic()
        try:
            self.a.xfer("WRITE", local, remote, timeout=30)
            ok = True
        except nixl_errors():
            ok = False
        t1 = time.monotonic()
        # The caller reuses its buffer at once, whatever the outcome: a late write must not
        # carry these bytes.
        self.src[:] = np.frombuffer(self.rng.randbytes(BUF), np.uint8)
        if ok:
            # A write that failed before this one began and has no fault since has ended for
            # good (landed before this one, or never); the others may still land after it.
            k.pending = [(v, at) for v, at in k.pending if self.faults.explains(at, t0)]
            k.values = [value]
            self.note("write ok")
        else:
            if not self.faults.explains(t0, t1):
                self.bad(f"WRITE {k.name} {ps} failed with no fault to explain it")
            k.pending = [(value, t1), *k.pending][:6]
            self.note("write failed")

    def matches(self, k: Key, ranges, at) -> bool:
        """Whether the read's bytes are, range by range, those of one value the key may hold."""
        for v in k.candidates:
            if all(
                off + ln <= len(v) and np.array_equal(self.dst[p : p + ln], v[off : off + ln])
                for p, (off, ln) in zip(at, ranges)
            ):
                return True
        return False

    def read(self, k: Key) -> None:
        if k.end == 0:
            return
        past = self.rng.random() < 0.2
        if past:
            # At least one range runs past every byte that may exist.
            start = self.rng.randrange(max(0, k.max_end - 4 * KiB), k.max_end + 1)
            ranges = [(start, self.rng.randrange(k.max_end - start + 1, k.max_end - start + 8 * KiB))]
            ranges += [(o, ln) for o, ln in self.pieces(0, k.end, 2)][: self.rng.randrange(0, 3)]
            self.rng.shuffle(ranges)
        else:
            start = self.rng.randrange(0, k.end)
            end = self.rng.randrange(start + 1, k.end + 1)
            ranges = self.pieces(start, end, self.rng.randrange(1, 5))
        at, pos = [], 0
        for _, ln in ranges:
            at.append(pos)
            pos += ln + self.rng.randrange(0, 64)
        if pos > BUF:
            return
        self.dst[:] = 0xEE
        local = [(addr(self.dst, p), ln, 0) for p, (_, ln) in zip(at, ranges)]
        remote = [(off, ln, k.dev) for off, ln in ranges]
        t0 = time.monotonic()
        try:
            self.a.xfer("READ", local, remote, timeout=30)
            ok = True
        except nixl_errors():
            ok = False
        t1 = time.monotonic()
        # A failed READ's buffer is reused for the next one at once (as LMCache and KVBM do):
        # DAOS's late answer to this one must never land in it.
        if past:
            if ok:
                self.bad(f"READ {k.name} {ranges} past the end (max {k.max_end}) succeeded")
            self.note("read past end")
            return
        if not ok:
            if k.sure and not self.faults.explains(t0, t1):
                self.bad(f"READ {k.name} {ranges} (end {k.end}) failed with no fault to explain it")
            self.note("read failed")
            return
        if not self.matches(k, ranges, at):
            self.bad(f"READ {k.name} {ranges} returned bytes of no value the key may hold")
        self.note("read ok")

    def query(self) -> None:
        absent = unique_key("absent")
        t0 = time.monotonic()
        try:
            res = self.a.query([k.name for k in self.keys] + [absent])
        except nixl_errors():
            if not self.faults.explains(t0, time.monotonic()):
                self.bad("queryMem failed with no fault to explain it")
            self.note("query failed")
            return
        for k, r in zip(self.keys, res):
            size = None if r is None else int(r["size"])
            lens = {len(v) for v in k.candidates}
            if k.sure and k.values and size != len(k.values[0]):
                self.bad(f"queryMem {k.name}: {size}, expected {len(k.values[0])}")
            if size is not None and size not in lens:
                self.bad(f"queryMem {k.name}: {size}, the length of no value it may hold ({sorted(lens)})")
        if res[-1] is not None:
            self.bad(f"queryMem of an absent key: {res[-1]}")
        self.note("query ok")

    def release_in_flight(self, k: Key) -> None:
        """Posts a READ and releases it at once: after the release returns nothing may write
        the buffer, whatever DAOS still holds (release never waits for DAOS)."""
        if k.end == 0:
            return
        ln = self.rng.randrange(1, k.end + 1)
        buf = self.rel[:ln]
        t0 = time.monotonic()
        try:
            h, _ = self.a.post("READ", [(addr(buf), ln, 0)], [(0, ln, k.dev)])
        except nixl_errors():
            if not self.faults.explains(t0, time.monotonic()):
                self.bad(f"posting a READ of {k.name} failed with no fault to explain it")
            return
        try:
            self.a.release(h)
        except nixl_errors() as e:
            self.bad(f"releasing a READ of {k.name} in flight failed: {e!r}")
            return
        buf[:] = 0x3C
        time.sleep(0.02)
        if np.count_nonzero(buf != 0x3C):
            self.bad(f"a released READ of {k.name} wrote its buffer afterwards")
        self.note("release in flight")

    def step(self) -> None:
        k = self.rng.choice(self.keys)
        r = self.rng.random()
        if k.end == 0 or r < 0.35:
            self.write(k)
        elif r < 0.75:
            self.read(k)
        elif r < 0.9:
            self.query()
        else:
            self.release_in_flight(k)

    def verify_all(self) -> None:
        """After the faults: every key reads back as one value it may hold (a miss only where
        a failed write may have landed in part)."""
        for k in self.keys:
            if k.end == 0:
                continue
            self.dst[:] = 0
            try:
                self.a.xfer("READ", [(addr(self.dst), k.end, 0)], [(0, k.end, k.dev)], timeout=30)
            except nixl_errors() as e:
                if k.sure:
                    self.bad(f"final READ of {k.name} [0, {k.end}) failed: {e!r}")
                continue
            if not self.matches(k, [(0, k.end)], [0]):
                self.bad(f"final READ of {k.name} returned bytes of no value it may hold")


def fault_loop(sim, faults: Faults, rng: random.Random, stop: threading.Event) -> None:
    while not stop.wait(rng.uniform(0.5, 3.0)):
        kind = rng.choice(["fail", "fail", "hang", "hang", "latency", "none"])
        if kind == "fail":
            w = faults.begin()
            sim.control(f"fail DER_IO {rng.randrange(1, 4)}")
            stop.wait(rng.uniform(0.05, 0.3))
            sim.control("fail DER_IO 0")
            faults.end(w)
        elif kind == "hang":
            w = faults.begin()
            sim.control("hang")
            stop.wait(rng.uniform(0.5, 3.5))
            sim.control("resume")
            faults.end(w)
        elif kind == "latency":
            # Below the deadline: nothing should fail because of it.
            sim.control(f"latency {rng.randrange(1000, 60000)}")
            stop.wait(rng.uniform(0.2, 1.0))
            sim.control("latency 0")


def test_model_check(make_agent, sim):
    rng = random.Random(SEED)
    faults, failures, stats = Faults(), [], {}
    workers = []
    chunked = {"container": unique_key("model-chunks"), "create_container": "true", "chunk_bytes": "65536"}
    for params in ({"num_queues": 2}, {"num_queues": 3, "max_inflight": 4, **chunked}):
        agent = make_agent({"timeout_ms": TIMEOUT_MS, **params})
        workers += [Worker(agent, faults, random.Random(rng.random()), failures, stats) for _ in range(2)]
    stop = threading.Event()
    deadline = time.monotonic() + SECONDS

    def work(w: Worker) -> None:
        try:
            while time.monotonic() < deadline and len(failures) < 20:
                w.step()
        except Exception:  # noqa: BLE001 - any escape is a finding
            failures.append(f"worker raised {traceback.format_exc()}")

    chaos = threading.Thread(target=fault_loop, args=(sim, faults, random.Random(rng.random()), stop))
    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    chaos.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(SECONDS + 120)
    stop.set()
    chaos.join()
    sim.calm()
    time.sleep(TIMEOUT_MS / 1000 * 2)  # writes abandoned at a deadline land or not, for good
    for w in workers:
        w.verify_all()
    assert not any(t.is_alive() for t in threads), "a worker is stuck"
    print(f"model check seed={SEED} {SECONDS:.0f}s: {stats}")
    assert not failures, f"seed={SEED} (NIXL_DAOS_MODEL_SEED replays it): " + "\n".join(failures[:10])
    assert stats.get("read ok", 0) > 0 and stats.get("write ok", 0) > 0, stats
