# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Drives LMCache's own engine (LMCacheEngineBuilder, no vLLM) through NIXL into our plugin.

Imported by the consumers tests and run as a script by them (one process per role in the
across-process tests). Importing it sets nothing: the caller sets NIXL_PLUGIN_DIR (a directory
holding our plugin as libplugin_OBJ.so) before the first NIXL agent of the process exists,
because NIXL's plugin manager reads it once.

The KV "GPU" side is a CPU tensor per sequence, laid out as LMCache's memory objects are
(KV_2LTD: [2, layers, tokens, heads * head_size]); CpuConnector copies between it and LMCache's
memory objects, which LMCache's MockGPUConnector does not (it copies nothing, so a byte check
through it would pass on garbage).
"""

import argparse
import json
import sys
import time
import uuid
from dataclasses import dataclass, field

import torch
from lmcache.v1.cache_engine import LMCacheEngineBuilder
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.gpu_connector import GPUConnectorInterface
from lmcache.v1.metadata import LMCacheMetadata


class CpuConnector(GPUConnectorInterface):
    """Copies KV bytes between a [2, L, T, H] CPU tensor (kwarg `kv`) and LMCache memory objects."""

    def __init__(self, layers: int, hidden: int):
        self.layers = layers
        self.hidden = hidden

    def from_gpu(self, memory_obj, start, end, **kwargs):
        memory_obj.tensor.copy_(kwargs["kv"][:, :, start:end, :])

    def to_gpu(self, memory_obj, start, end, **kwargs):
        kwargs["kv"][:, :, start:end, :].copy_(memory_obj.tensor)

    def batched_from_gpu(self, memory_objs, starts, ends, **kwargs):
        for obj, s, e in zip(memory_objs, starts, ends, strict=True):
            self.from_gpu(obj, s, e, **kwargs)

    def batched_to_gpu(self, memory_objs=None, starts=None, ends=None, **kwargs):
        for obj, s, e in zip(memory_objs, starts, ends, strict=True):
            self.to_gpu(obj, s, e, **kwargs)

    def get_shape(self, num_tokens):
        return torch.Size([2, self.layers, num_tokens, self.hidden])


@dataclass
class Setup:
    """One LMCache engine's shape and NIXL storage settings."""

    bucket: str  # becomes the DAOS container (S3 consumers' parameter, see README)
    layers: int = 2
    heads: int = 2
    head_size: int = 64
    chunk: int = 256
    dtype: torch.dtype = torch.float16
    pool_size: int = 0  # 0: dynamic (one object per chunk key); > 0: static slots
    async_put: bool = False
    presence_cache: bool = False
    local_cpu: bool = False  # False: LocalCPUBackend is only NIXL's staging pool, every hit is DAOS
    cpu_gb: float = 0.25
    params: dict = field(default_factory=dict)  # extra nixl_backend_params
    model: str = "nixl-daos-test"
    backend: str = "OBJ"  # "DAOS" needs an LMCache with upstream/lmcache's patch

    @property
    def hidden(self) -> int:
        return self.heads * self.head_size

    @property
    def chunk_bytes(self) -> int:
        return 2 * self.layers * self.chunk * self.hidden * torch.finfo(self.dtype).bits // 8


def build(setup: Setup, instance_id: str | None = None):
    """An LMCacheEngine on NIXL storage, backend OBJ (our plugin under that name) unless
    setup.backend says otherwise, CPU buffers."""
    params = {"bucket": setup.bucket, "endpoint_override": "http://unused:9000", "region": "none"}
    params.update(setup.params)
    config = LMCacheEngineConfig.from_defaults(
        chunk_size=setup.chunk,
        local_cpu=setup.local_cpu,
        max_local_cpu_size=setup.cpu_gb,
        save_unfull_chunk=False,
        nixl_buffer_device="cpu",
        extra_config={
            "enable_nixl_storage": True,
            "nixl_backend": setup.backend,
            "nixl_pool_size": setup.pool_size,
            "nixl_backend_params": params,
            "nixl_async_put": setup.async_put,
            "nixl_presence_cache": setup.presence_cache,
        },
    )
    metadata = LMCacheMetadata(
        model_name=setup.model,
        world_size=1,
        local_world_size=1,
        worker_id=0,
        local_worker_id=0,
        kv_dtype=setup.dtype,
        kv_shape=(setup.layers, 2, setup.chunk, setup.heads, setup.head_size),
        chunk_size=setup.chunk,
    )
    connector = CpuConnector(setup.layers, setup.hidden)
    instance_id = instance_id or f"lmc-{uuid.uuid4().hex[:8]}"
    engine = LMCacheEngineBuilder.get_or_create(instance_id, config, metadata, connector, None, None)
    engine.post_init()
    return instance_id, engine


def destroy(instance_id: str) -> None:
    LMCacheEngineBuilder.destroy(instance_id)


def tokens_for(seed: int, n: int) -> torch.Tensor:
    """A deterministic token sequence (same seed, same tokens in every process)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 50_000, (n,), generator=g, dtype=torch.long)


def kv_for(setup: Setup, tokens: torch.Tensor) -> torch.Tensor:
    """KV bytes that depend on each token and its position, so a chunk read from the wrong key
    or a torn chunk shows up in a byte comparison. Same tokens, same bytes in every process."""
    t = tokens.numel()
    pos = torch.arange(t, dtype=torch.int64)
    base = (tokens.to(torch.int64) * 1_000_003 + pos * 7919) % 65_521
    lane = torch.arange(2 * setup.layers * setup.hidden, dtype=torch.int64).view(2, setup.layers, 1, setup.hidden)
    raw = ((base.view(1, 1, t, 1) * 31 + lane * 17) % 251).to(torch.int16)
    return raw.to(setup.dtype)


def store(engine, setup: Setup, tokens: torch.Tensor) -> None:
    engine.store(tokens, kv=kv_for(setup, tokens))


def retrieve(engine, setup: Setup, tokens: torch.Tensor):
    """(mask of tokens retrieved, the KV tensor they were written into; NaN where not)."""
    out = torch.full((2, setup.layers, tokens.numel(), setup.hidden), float("nan"), dtype=setup.dtype)
    mask = engine.retrieve(tokens, kv=out)
    return mask, out


def wait_puts_done(engine, timeout_s: float = 60.0) -> None:
    """nixl_async_put returns before the bytes are in DAOS: wait until no put is in flight."""
    deadline = time.monotonic() + timeout_s
    backend = nixl_backend(engine)
    while True:
        with backend.progress_lock:
            if not backend.progress_set:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(backend.progress_set)} LMCache puts still in flight after {timeout_s} s")
        time.sleep(0.01)


def nixl_backend(engine):
    backends = engine.storage_manager.storage_backends
    return next(b for name, b in backends.items() if name.startswith("Nixl"))


# --- script mode: one role per process (tests/consumers/test_lmcache_real.py) ---------------------


def _main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "role",
        choices=["store", "check", "store-forever"],
        help="store seeds 0..seqs-1 and exit; check what a seed range retrieves (JSON);"
        " store-forever: seeds 1000, 1001, ... until killed",
    )
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--seqs", type=int, default=4)
    ap.add_argument("--first-seed", type=int, default=0, help="check: seeds first-seed .. first-seed+seqs-1")
    ap.add_argument("--chunks", type=int, default=8, help="chunks per sequence")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--head-size", type=int, default=64)
    args = ap.parse_args()
    setup = Setup(bucket=args.bucket, layers=args.layers, heads=args.heads, head_size=args.head_size, cpu_gb=0.5)
    n = args.chunks * setup.chunk
    iid, engine = build(setup)
    try:
        _run_role(args, setup, n, engine)
    finally:
        # Without this the process never exits: LMCache's StorageManager runs a non-daemon
        # event-loop thread that only LMCacheEngineBuilder.destroy stops.
        destroy(iid)
    return 0


def _run_role(args, setup: Setup, n: int, engine) -> None:
    if args.role == "store":
        for s in range(args.seqs):
            store(engine, setup, tokens_for(s, n))
        print(json.dumps({"stored_chunks": args.seqs * args.chunks}), flush=True)
    elif args.role == "store-forever":
        # Writes new sequences until killed; announces each one once it is stored, with the time
        # its store took (the killer aims at the middle of the next one).
        s = 0
        while True:
            t0 = time.monotonic()
            store(engine, setup, tokens_for(1000 + s, n))
            print(json.dumps({"stored_seq": 1000 + s, "store_s": time.monotonic() - t0}), flush=True)
            s += 1
    else:
        print(json.dumps(check(engine, setup, range(args.first_seed, args.first_seed + args.seqs), n)), flush=True)


def check(engine, setup: Setup, seeds, n: int) -> dict:
    """What a reader finds of the sequences `seeds`, two ways:
    - as LMCache serves a request (engine.retrieve: the longest stored prefix): hit_chunks,
      equal_chunks (hits whose bytes are the stored ones);
    - chunk by chunk at the storage backend (its own lookup, then a read of that key alone), so a
      chunk after a missing one is checked too: present_chunks, whole_chunks, torn_chunks (present
      and read, but not the bytes stored: must never happen)."""
    r = dict.fromkeys(
        ("total_chunks", "hit_chunks", "equal_chunks", "present_chunks", "whole_chunks", "torn_chunks"), 0
    )
    r["unreadable"] = []  # (seed, chunk, size queryMem reported) of chunks present but not readable
    backend = nixl_backend(engine)
    for seed in seeds:
        toks = tokens_for(seed, n)
        want = kv_for(setup, toks)
        mask, out = retrieve(engine, setup, toks)
        for start, end, key in engine.token_database.process_tokens(tokens=toks):
            r["total_chunks"] += 1
            if bool(mask[start:end].all()):
                r["hit_chunks"] += 1
                r["equal_chunks"] += torch.equal(out[:, :, start:end, :], want[:, :, start:end, :])
            if not backend.contains(key):
                continue
            r["present_chunks"] += 1
            obj = backend.get_blocking(key)
            if obj is None:  # reported present, then unreadable: not a hit, so not torn either
                size = backend.agent.nixl_agent.query_memory(
                    [(0, 0, 0, backend._format_object_key(key))], backend.agent.backend, mem_type="OBJ"
                )[0]
                r["unreadable"].append((seed, start // setup.chunk, size))
                continue
            try:
                if torch.equal(obj.tensor, want[:, :, start:end, :]):
                    r["whole_chunks"] += 1
                else:
                    r["torn_chunks"] += 1
            finally:
                obj.ref_count_down()
    return r


if __name__ == "__main__":
    sys.exit(_main())
