# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""One vLLM server process (offline `vllm.LLM`, CPU) with LMCache's KV connector storing into NIXL
storage: our plugin as NIXL's OBJ backend (`--storage daos`), NIXL's POSIX backend on a directory
(`--storage posix`, the reference a user would compare with), or no KV connector at all
(`--storage none`, plain recompute).

It serves the prompts of a JSON file one at a time, as requests on a critical path arrive, and
writes what each got (wall time to its first token, the token and its top log-probabilities,
the tokens vLLM says it did not have to compute) and LMCache's counters to --out as JSON. The
plugin's own totals are appended to $NIXL_DAOS_STATS_FILE by the plugin when the process exits.

The caller (tests/vllm/e2e.py) sets the environment first: NIXL_PLUGIN_DIR holding our plugin as
libplugin_OBJ.so, DAOS_POOL and NIXL_DAOS_LIBDAOS, and PYTHONHASHSEED (LMCache's chunk keys hash
tokens, and must agree across processes). The LMCache patch series under upstream/lmcache (its
CPU connector) must be importable ahead of the installed LMCache (PYTHONPATH).
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# vLLM's engine core in this process (not a child): LMCache, NIXL and the plugin live here, so
# the plugin's totals and LMCache's counters are this process's, and TTFT has no IPC in it.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
# vLLM's CPU backend otherwise takes most of the machine's memory for its KV cache (20 GiB of
# 24 here), which leaves a DAOS engine on the same machine (its SCM is tmpfs) short of memory.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")


def lmcache_config(args) -> dict:
    cfg = {
        "chunk_size": args.chunk,
        # Off: every hit must come from NIXL storage, not LMCache's own CPU tier (which then
        # serves only as NIXL's staging pool).
        "local_cpu": False,
        "max_local_cpu_size": 1,
        "save_unfull_chunk": False,
        "nixl_buffer_device": "cpu",
        "extra_config": {
            "enable_nixl_storage": True,
            "nixl_pool_size": 0,  # dynamic: one NIXL object (DAOS key, file) per chunk
            "nixl_async_put": args.async_put,
        },
    }
    extra = cfg["extra_config"]
    if args.storage == "daos":
        extra["nixl_backend"] = "OBJ"
        # S3 consumers' parameters: `bucket` becomes the DAOS container (see the README).
        extra["nixl_backend_params"] = {
            "bucket": args.bucket,
            "endpoint_override": "http://unused:9000",
            "region": "none",
        }
    else:
        extra["nixl_backend"] = "POSIX"
        extra["nixl_path"] = args.posix_dir
        extra["nixl_backend_params"] = {}
    return cfg


def make_llm(args):
    from vllm import LLM

    kw = dict(
        model=args.model,
        skip_tokenizer_init=True,
        enable_prefix_caching=False,  # a repeat must be found in LMCache, not in vLLM's own cache
        max_model_len=args.max_model_len,
        max_num_batched_tokens=args.max_model_len,
        dtype="bfloat16",
        seed=0,
    )
    if args.storage != "none":
        import yaml
        from vllm.config import KVTransferConfig

        path = Path(tempfile.mkdtemp(prefix="lmcache-cfg-")) / "lmcache.yaml"
        path.write_text(yaml.safe_dump(lmcache_config(args)))
        os.environ["LMCACHE_CONFIG_FILE"] = str(path)
        kw["kv_transfer_config"] = KVTransferConfig(kv_connector="LMCacheConnectorV1", kv_role="kv_both")
    return LLM(**kw)


def zero_loaded_chunks() -> None:
    """The negative control: wrong KV bytes handed to vLLM as a hit, which the checks of
    tests/vllm/e2e.py must catch (the next token and its log-probabilities then differ)."""
    from lmcache.v1.gpu_connector.cpu_connectors import VLLMPagedMemCPUConnector

    original = VLLMPagedMemCPUConnector.to_gpu

    def to_gpu(self, memory_obj, start, end, **kwargs):
        memory_obj.tensor.zero_()
        return original(self, memory_obj, start, end, **kwargs)

    VLLMPagedMemCPUConnector.to_gpu = to_gpu


def require_nixl_storage() -> None:
    """LMCache keeps serving when its NIXL backend could not be created (it logs the error and
    stores nothing): refuse to measure such a run."""
    from lmcache.v1.cache_engine import LMCacheEngineBuilder

    engines = list(LMCacheEngineBuilder._instances.values())
    names = [n for e in engines for n in getattr(e.storage_manager, "storage_backends", {})]
    if not any(n.startswith("Nixl") for n in names):
        sys.exit(f"LMCache has no NIXL storage backend (backends: {names or 'none'}); see its log above")


def lmcache_counters() -> dict:
    """LMCache's counters since the last call (its stats monitor), the ones a hit is judged by."""
    try:
        from lmcache.observability import LMCStatsMonitor
    except ImportError:
        return {}
    s = LMCStatsMonitor.GetOrCreate().get_stats_and_clear()
    names = [
        "interval_retrieve_requests",
        "interval_store_requests",
        "interval_requested_tokens",
        "interval_hit_tokens",
        "interval_stored_tokens",
        "interval_lookup_requests",
        "interval_lookup_tokens",
        "interval_lookup_hits",
    ]
    return {n.removeprefix("interval_"): int(getattr(s, n, 0) or 0) for n in names}


def serve(llm, prompt: list[int], top: int) -> dict:
    from vllm import SamplingParams

    sp = SamplingParams(max_tokens=1, temperature=0.0, logprobs=top, detokenize=False)
    t0 = time.perf_counter()
    out = llm.generate([{"prompt_token_ids": prompt}], sp, use_tqdm=False)[0]
    ttft = time.perf_counter() - t0
    comp = out.outputs[0]
    lp = comp.logprobs[0] if comp.logprobs else {}
    return {
        "ttft_s": ttft,
        "token": comp.token_ids[0],
        "logprobs": {str(t): float(v.logprob) for t, v in lp.items()},
        "prompt_tokens": len(prompt),
        "cached_tokens": int(out.num_cached_tokens or 0),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--storage", choices=["daos", "posix", "none"], required=True)
    ap.add_argument("--bucket", help="--storage daos: the DAOS container")
    ap.add_argument("--posix-dir", help="--storage posix: the directory of NIXL's POSIX files")
    ap.add_argument("--prompts", required=True, help="JSON: [{name, ids}], served in order")
    ap.add_argument("--out", required=True)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--async-put", action="store_true", help="LMCache's nixl_async_put")
    ap.add_argument("--top", type=int, default=5, help="log-probabilities kept per prompt")
    ap.add_argument("--warmup", type=int, default=1, help="unrecorded prompts first (first-call JIT)")
    ap.add_argument(
        "--zero-loads",
        action="store_true",
        help="negative control: every KV chunk LMCache loads is zeroed before vLLM sees it (the checks must then fail)",
    )
    args = ap.parse_args()

    prompts = json.loads(Path(args.prompts).read_text())
    t0 = time.perf_counter()
    llm = make_llm(args)
    startup = time.perf_counter() - t0
    if args.storage != "none":
        require_nixl_storage()
    if args.zero_loads:
        # After vLLM's start: importing LMCache's connector module before it breaks vLLM's
        # kernel registration on CPU (vllm/triton_utils/dispatcher.py).
        zero_loaded_chunks()
    # A warm-up prompt of its own tokens (never served again): the first forward pass compiles
    # kernels, which would otherwise land in the first measured TTFT.
    for i in range(args.warmup):
        serve(llm, [(7 * j + 11 * i + 3) % 1000 + 1000 for j in range(300)], args.top)
    warmup = lmcache_counters()  # the warm-up's counts, kept apart (its chunk is stored)
    results = []
    for p in prompts:
        r = serve(llm, p["ids"], args.top)
        r["name"] = p["name"]
        r["lmcache"] = lmcache_counters()
        results.append(r)
        print(
            f"{p['name']}: ttft {r['ttft_s']:.3f} s, {r['cached_tokens']}/{r['prompt_tokens']} cached, "
            f"lmcache hit {r['lmcache'].get('hit_tokens', 0)} stored {r['lmcache'].get('stored_tokens', 0)}",
            flush=True,
        )
    out = {"startup_s": startup, "pid": os.getpid(), "warmup": warmup, "results": results}
    Path(args.out).write_text(json.dumps(out))
    if args.storage != "none":
        shutdown(llm)
    return 0


def shutdown(llm) -> None:
    """Shuts vLLM's engine and LMCache's down so that the process can exit on its own.

    vLLM 0.32's LMCacheConnectorV1 does not forward the connector's shutdown() to LMCache's
    adapter (the base class's no-op runs), so LMCache's engine is never destroyed, and its
    storage manager's non-daemon thread keeps an in-process vLLM alive. (In vLLM's default
    multiprocess mode the engine-core process is killed instead, with LMCache's puts still in
    flight in it.) LMCache's own full shutdown (LMCacheManager.stop_services) aborts the
    process here: closing its ZMQ offload server from this thread trips libzmq's assertion
    `_term_acks > 0`. So only its last step runs: every LMCache engine is destroyed."""
    import threading

    from lmcache.v1.cache_engine import LMCacheEngineBuilder

    llm.llm_engine.engine_core.shutdown()
    for iid in list(LMCacheEngineBuilder._instances):
        LMCacheEngineBuilder.destroy(iid)
    left = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if left:
        print(f"non-daemon threads left after the shutdown: {left}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
