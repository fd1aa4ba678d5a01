#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The consumers venv for tests/consumers: LMCache and the `nixl` meta-package, pinned, from PyPI.
# It is large (about 6.7 GB: LMCache pulls a CUDA build of torch, cupy and cuda-python; 5 minutes
# to install on a 2-core VM), so it lives outside the clone and is reused by every later run on
# the same machine: ${NIXL_DAOS_CONSUMERS_VENV:-$HOME/.cache/nixl-daos/consumers-venv}.
# Idempotent: when the venv already has the pinned versions, nothing is installed.
#
# Prints the venv's python on stdout as its last line and exits 0 when the venv is ready; exits 3
# with one line on stderr saying why when it cannot be had (too little disk, no Python 3.11, pip
# failed), so callers can skip the consumers tests. Also runs alone: bash ci/consumers.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/ci/lib.sh"

LMCACHE_VERSION=0.5.6
NIXL_VERSION=1.5.1
NEED_GB=${NIXL_DAOS_CONSUMERS_NEED_GB:-15} # the install's 6.7 GB plus pip's download cache and unpacking space
VENV=${NIXL_DAOS_CONSUMERS_VENV:-$HOME/.cache/nixl-daos/consumers-venv}
CPY="$VENV/bin/python"

skip() { printf '== %s: SKIP: %s\n' "${0##*/}" "$*" >&2; exit 3; }
log() { say "$@" >&2; }


installed() {
	[ -x "$CPY" ] && is_py311 "$CPY" && "$CPY" - "$LMCACHE_VERSION" "$NIXL_VERSION" <<'EOF' 2>/dev/null
import importlib.metadata as m, sys
ok = m.version("lmcache") == sys.argv[1] and m.version("nixl") == sys.argv[2]
import pytest  # noqa: F401  (the tests run with this venv's pytest)
sys.exit(0 if ok else 1)
EOF
}

if installed; then
	log "consumers venv ready: $VENV (lmcache $LMCACHE_VERSION, nixl $NIXL_VERSION)"
	echo "$CPY"
	exit 0
fi

free_gb=$(free_gb_for "$VENV")
[ "$free_gb" -ge "$NEED_GB" ] ||
	skip "only ${free_gb} GB free for $VENV; the consumers venv needs about ${NEED_GB} GB (set NIXL_DAOS_CONSUMERS_VENV to a roomier place)"

PY=$(find_py311) || skip "no Python 3.11 on PATH for the consumers venv (the nixl wheels are cp311)"

start=$(date +%s)
if [ ! -x "$CPY" ] || ! is_py311 "$CPY"; then
	rm -rf "$VENV"
	mkdir -p "$(dirname "$VENV")"
	log "creating $VENV with $PY"
	"$PY" -m venv "$VENV" || skip "python -m venv failed (apt-get install python3.11-venv)"
fi
log "pip install lmcache==$LMCACHE_VERSION nixl==$NIXL_VERSION pytest into $VENV (about 6.7 GB, minutes)"
if ! "$CPY" -m pip install -q --disable-pip-version-check \
	"lmcache==$LMCACHE_VERSION" "nixl==$NIXL_VERSION" pytest >&2; then
	skip "pip install into $VENV failed (see above); delete $VENV to start over"
fi
installed || skip "$VENV does not import the pinned lmcache $LMCACHE_VERSION / nixl $NIXL_VERSION after pip install"
log "consumers venv installed in $(($(date +%s) - start)) s: $VENV ($(du -sh "$VENV" 2>/dev/null | cut -f1))"
echo "$CPY"
