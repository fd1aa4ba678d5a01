# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Smoke test: vLLM's CPU backend + LMCache with the CPU connector (0003/0004) stores and retrieves.

Runs one vLLM engine (offline, LMCacheConnectorV1, prefix caching off) on a tiny random-weight
Llama and sends the same ~1000-token prompt twice: the first pass computes and stores it, the
second must be served from LMCache (LMCache logs the retrieved tokens) and yield the same greedy
tokens. Prints one `RESULT` line and exits 0 when both hold.

  python cpu_smoke.py MODEL_DIR      # PYTHONPATH: the patched lmcache; LMCACHE_* set by the caller
"""

import os
import sys

import torch
from vllm import LLM, SamplingParams
from vllm.config import KVTransferConfig
from vllm.inputs import TokensPrompt


def main() -> int:
    model = sys.argv[1]
    prompt_len = int(os.environ.get("SMOKE_PROMPT_LEN", "1000"))
    torch.manual_seed(1)
    ids = torch.randint(5, 995, (prompt_len,)).tolist()
    llm = LLM(
        model=model,
        skip_tokenizer_init=True,
        enable_prefix_caching=False,
        max_model_len=2048,
        max_num_seqs=1,
        dtype="bfloat16",
        kv_transfer_config=KVTransferConfig(kv_connector="LMCacheConnectorV1", kv_role="kv_both"),
    )
    params = SamplingParams(temperature=0.0, max_tokens=8, detokenize=False)
    outs = []
    for attempt in ("compute+store", "retrieve"):
        out = llm.generate([TokensPrompt(prompt_token_ids=ids)], params, use_tqdm=False)
        toks = list(out[0].outputs[0].token_ids)
        print(f"SMOKE {attempt}: next tokens {toks}", flush=True)
        outs.append(toks)
    same = outs[0] == outs[1]
    print(f"RESULT tokens_equal={same}", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
