# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""A small Llama with random weights, made here (no model can be downloaded on these machines),
for vLLM to serve on CPU. Same seed, same weights: every process of a run, and every run on a
machine, serves the same model, so KV bytes one process stores are the ones another would compute.

Its shape is chosen so that a prompt's prefill is long enough on 2 cores (about 1 s for 2,048
tokens) for a KV-cache hit to show in TTFT, and small enough to build in seconds: hidden 1024,
4 layers, 16 attention heads, 2 KV heads (head size 64), vocabulary 32,000, bf16, about 60 M
parameters. Per token it keeps 2 (K, V) x 4 layers x 2 heads x 64 x 2 bytes = 2 KiB of KV, so
LMCache's 256-token chunk is 512 KiB.

    python tests/vllm/model.py [DIR]   # prints the model directory (cached)
"""

import hashlib
import json
import os
import sys
from pathlib import Path

CONFIG = {
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
    # transformers' default (0.02) makes a random model all but blind to its context: its next
    # token barely depends on the KV cache, so zeroed KV chunks read back as a hit gave
    # log-probabilities within 0.003 of the recompute's. Larger weights make attention and the
    # output distribution peaked, so wrong KV bytes change the answer.
    "initializer_range": 0.2,
}
SEED = 20261202


def kv_bytes_per_token() -> int:
    head = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    return 2 * CONFIG["num_hidden_layers"] * CONFIG["num_key_value_heads"] * head * 2  # bf16


def model_dir(root: Path | None = None) -> Path:
    """The model's directory, made on first use; the name carries a hash of its shape and seed."""
    tag = hashlib.sha256(json.dumps([CONFIG, SEED], sort_keys=True).encode()).hexdigest()[:12]
    root = root or Path(os.environ.get("NIXL_DAOS_VLLM_MODELS", Path.home() / ".cache" / "nixl-daos" / "vllm-models"))
    out = root / f"random-llama-{tag}"
    if (out / "config.json").exists():
        return out
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    cfg = LlamaConfig(**{k: v for k, v in CONFIG.items() if k != "torch_dtype"})
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tmp.rename(out)  # atomic: a concurrent maker finds a whole model or none
    return out


if __name__ == "__main__":
    print(model_dir(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
