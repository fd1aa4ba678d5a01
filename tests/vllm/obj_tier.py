# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""vLLM's own object-store tier (`vllm/v1/kv_offload/tiering/obj`), driven by vLLM's engine, with
the plugin as NIXL's OBJ backend: does vLLM 0.32's CPU platform enable it?

The tier sits below vLLM's CPU offloading tier (OffloadingConnector with TieringOffloadingSpec
and a secondary tier of type "obj"). It asks NIXL for "OBJ" with S3 parameters only, which the
plugin takes (`bucket` becomes the container). This starts an offline vLLM with that
configuration on the small local model (tests/vllm/model.py) and serves one prompt twice. It
prints one JSON line: `{"enabled": true, ...}` with what the second serve found, or
`{"enabled": false, "stage": ..., "error": ..., "where": ...}`: the exception that stopped vLLM
and the vLLM source line it came from. Exit 0 either way (the probe reports; it does not judge);
exit 1 only when the probe itself could not run (no model, no vLLM).

    NIXL_PLUGIN_DIR=<dir with libplugin_OBJ.so> NIXL_DAOS_LIBDAOS=... DAOS_POOL=... \\
        python tests/vllm/obj_tier.py --model DIR
"""

import argparse
import json
import os
import sys
import traceback
import uuid

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")


def where(exc: BaseException) -> str:
    """The innermost frame of the traceback inside vLLM (else the innermost), as path:line."""
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if "/vllm/" in f.filename] or frames
    f = inside[-1]
    path = f.filename.split("site-packages/")[-1]
    return f"{path}:{f.lineno} ({f.line})"


def root(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__
    return exc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--bucket", default=f"vllm-obj-{uuid.uuid4().hex[:8]}")
    args = ap.parse_args()
    try:
        from vllm import LLM, SamplingParams
        from vllm.config import KVTransferConfig
    except ImportError as e:
        print(f"obj_tier.py: vLLM does not import: {e}", file=sys.stderr)
        return 1

    extra = {
        "spec_name": "TieringOffloadingSpec",
        "cpu_bytes_to_use": 256 << 20,
        "secondary_tiers": [
            {
                "type": "obj",
                "store_config": {"bucket": args.bucket, "endpoint_override": "http://unused:9000"},
                "io_threads": 2,
            }
        ],
    }
    out: dict = {"config": extra}
    stage = "engine start"
    try:
        llm = LLM(
            model=args.model,
            skip_tokenizer_init=True,
            enable_prefix_caching=False,
            max_model_len=4096,
            max_num_batched_tokens=4096,
            dtype="bfloat16",
            seed=0,
            kv_transfer_config=KVTransferConfig(
                kv_connector="OffloadingConnector", kv_role="kv_both", kv_connector_extra_config=extra
            ),
        )
        stage = "serve"
        sp = SamplingParams(max_tokens=1, temperature=0.0, detokenize=False)
        prompt = [{"prompt_token_ids": [(37 * i) % 30000 + 5 for i in range(2100)]}]
        first = llm.generate(prompt, sp, use_tqdm=False)[0]
        second = llm.generate(prompt, sp, use_tqdm=False)[0]
        out.update(
            enabled=True,
            tokens=[first.outputs[0].token_ids[0], second.outputs[0].token_ids[0]],
            cached_tokens_second=int(second.num_cached_tokens or 0),
        )
    except Exception as e:  # the finding: what stopped vLLM, and where
        r = root(e)
        out.update(enabled=False, stage=stage, error=f"{type(r).__name__}: {r}"[:400], where=where(r))
    print(json.dumps(out), flush=True)
    os._exit(0)  # vLLM's half-started engine may hold non-daemon threads


if __name__ == "__main__":
    sys.exit(main())
