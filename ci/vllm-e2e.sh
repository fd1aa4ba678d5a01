#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# vLLM (CPU) with LMCache's KV connector storing through the plugin (tests/vllm/e2e.py): the
# vLLM venv (ci/vllm.sh, cached per machine), LMCache with upstream/lmcache's patch series (its
# CPU connector) as a PYTHONPATH overlay, a small random-weight model made locally
# (tests/vllm/model.py, cached), then the modes asked for.
#
#   bash ci/vllm-e2e.sh [--modes sim|real|posix|none,...] [--prompts N] [--json FILE]
#
# `real` needs the real engine's environment (eval "$(daos-local.sh env)"). Exits 0 when every
# check passed, 1 when one failed, 3 with one line saying why when the stack cannot be had
# (disk, Python, an install), so callers skip rather than pass.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/ci/lib.sh"
cd "$ROOT"

skip() { printf '== %s: SKIP: %s\n' "${0##*/}" "$*"; exit 3; }

[ -f target/release/libplugin_DAOS.so ] && [ -f target/release/libdaos_sim.so ] ||
	die "build the plugin and daos-sim first (cargo build --release --workspace)"
VLLM_PY="" rc=0
VLLM_PY=$(bash ci/vllm.sh | tail -n 1) || rc=$?
case $rc in
0) ;;
3) skip "no vLLM venv (see the line above)" ;;
*) die "ci/vllm.sh failed (exit $rc)" ;;
esac
CACHE=$(dirname "$(dirname "$(dirname "$VLLM_PY")")") # the directory holding the venv
OVERLAY=$(bash upstream/lmcache/overlay.sh "$VLLM_PY" "$CACHE/vllm-lmcache-overlay" | tail -n 1) ||
	die "could not make the patched LMCache overlay (upstream/lmcache/overlay.sh)"
"$VLLM_PY" -c 'import sys; sys.path.insert(0, sys.argv[1])
import lmcache.v1.gpu_connector.cpu_connectors' "$OVERLAY" 2>/dev/null ||
	die "the overlay $OVERLAY has no CPU connector (lmcache.v1.gpu_connector.cpu_connectors): upstream/lmcache lacks its patch"
start=$(date +%s)
say "model: $("$VLLM_PY" tests/vllm/model.py 2>/dev/null | tail -n 1) ($(($(date +%s) - start)) s)"
erc=0
timeout --signal=KILL 2400 "$VLLM_PY" tests/vllm/e2e.py --python "$VLLM_PY" --overlay "$OVERLAY" "$@" || erc=$?
case $erc in
0) say "vLLM end to end: every check passed" ;;
137) say "ERROR: vLLM end to end: killed after 2400 s" ;;
*) say "ERROR: vLLM end to end: a check failed (exit $erc)" ;;
esac
[ "$erc" = 0 ] || exit 1
