# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The workloads of bench/kv_bench.py (KVBM's layer-separate layout at three sizes) and the DRAM
buffers they move: one source of distinct random blocks, one destination poisoned before each
read and compared in full after it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

MiB = 1 << 20
GB = 1e9


@dataclass
class Workload:
    name: str
    keys: int
    layers: int  # descriptors per key
    block: int  # bytes per descriptor

    @property
    def key_bytes(self) -> int:
        return self.layers * self.block

    @property
    def nbytes(self) -> int:
        return self.keys * self.key_bytes

    @property
    def descs(self) -> int:
        return self.keys * self.layers

    def describe(self) -> str:
        b = f"{self.block // MiB} MiB" if self.block >= MiB else f"{self.block // 1024} KiB"
        return f"{self.name}: {self.keys} keys x {self.layers} desc x {b} = {self.nbytes / 2**30:.3f} GiB"

    def local_offsets(self) -> np.ndarray:
        """DRAM offset of (key k, layer l) at [k, l]: layer-major, as a KV cache keeps one tensor
        per layer, so a key's layers lie apart in memory and never merge into one extent."""
        k = np.arange(self.keys, dtype=np.uint64)[:, None]
        layer = np.arange(self.layers, dtype=np.uint64)[None, :]
        return (layer * np.uint64(self.keys) + k) * np.uint64(self.block)


def make_workloads(scale: float, names: list[str]) -> list[Workload]:
    def n(x: int) -> int:
        return max(1, round(x * scale))

    ref = Workload("ref", n(120), 40, MiB)
    all_ = {
        "ref": ref,
        "small": Workload("small", n(256), 64, 4096),
        "lmcache": Workload("lmcache", max(1, ref.nbytes // (8 * MiB)), 1, 8 * MiB),
    }
    return [all_[x] for x in names if x in all_]


class Buffers:
    """One DRAM source (random bytes) and one destination, sized for the largest workload."""

    def __init__(self, nbytes: int, threads: int):
        self.threads = threads
        self.src = np.empty(nbytes, np.uint8)
        self.dst = np.empty(nbytes, np.uint8)
        self.pool = ThreadPoolExecutor(threads)
        # 64 MiB of random words; chunk i is them XOR a constant of its own, so no two blocks
        # anywhere are equal (a misplaced range cannot compare equal) at memory speed.
        seed = np.random.default_rng(1000).integers(0, 2**64 - 1, 8 * MiB, np.uint64, endpoint=True)

        def fill(i_c):
            i, (a, b) = i_c
            n = (b - a) // 8
            np.bitwise_xor(seed[:n], np.uint64((i * 0x9E3779B97F4A7C15) % 2**64), out=self.src[a:b].view(np.uint64))
            self.dst[a:b] = 0

        list(self.pool.map(fill, enumerate(self.chunks(nbytes, 64 * MiB))))
        self.rng = np.random.default_rng(7)

    @staticmethod
    def chunks(nbytes: int, size: int) -> list[tuple[int, int]]:
        return [(a, min(a + size, nbytes)) for a in range(0, nbytes, size)]

    def poison(self, w: Workload) -> None:
        """Makes the first and last 8 bytes and one random byte of every block of the destination
        differ from the source, so any block a transfer leaves untouched fails the compare."""
        n = w.nbytes // w.block
        d = self.dst[: w.nbytes].reshape(n, w.block)
        s = self.src[: w.nbytes].reshape(n, w.block)
        d[:, :8] = ~s[:, :8]
        d[:, -8:] = ~s[:, -8:]
        pos = np.arange(n, dtype=np.int64) * w.block + self.rng.integers(8, w.block - 8, n)
        self.dst[pos] = ~self.src[pos]

    def first_mismatch(self, nbytes: int) -> int | None:
        """Full compare of dst with src over nbytes, in parallel chunks; the first bad offset."""

        def cmp(ab):
            a, b = ab
            if np.array_equal(self.dst[a:b].view(np.uint64), self.src[a:b].view(np.uint64)):
                return None
            return a + int(np.flatnonzero(self.dst[a:b] != self.src[a:b])[0])

        bad = [x for x in self.pool.map(cmp, self.chunks(nbytes, 32 * MiB)) if x is not None]
        return min(bad) if bad else None
