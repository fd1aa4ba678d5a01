#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Set-up shared by ci/test.sh and ci/bench.sh, from a fresh clone on a fresh machine:
#   1. the C++ compiler the shim needs, only if missing;
#   2. the project venv (.venv, git-ignored) with the NIXL 1.5.1 wheel, numpy and pytest;
#   3. the release build of the workspace: target/release/libplugin_DAOS.so and libdaos_sim.so.
# Idempotent: a second run installs nothing and rebuilds only what changed.
# Sourced by its callers (it sets ROOT and VPY, the venv's python, and cds to ROOT); also runs alone.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

NIXL_WHEEL_VERSION=1.5.1
VENV="$ROOT/.venv"

source "$ROOT/ci/lib.sh"

# --- 1. system packages ------------------------------------------------------------------------
# The default build needs no libclang: the libdaos declarations are committed (src/daos/bindings.rs).
pkgs=()
command -v c++ >/dev/null || command -v g++ >/dev/null || pkgs+=(g++)
command -v valgrind >/dev/null || pkgs+=(valgrind) # tests/e2e/test_valgrind.py
[ ${#pkgs[@]} -eq 0 ] || apt_install "${pkgs[@]}"
[ -d "$HOME/.cargo/bin" ] && case ":$PATH:" in *":$HOME/.cargo/bin:"*) ;; *) PATH="$HOME/.cargo/bin:$PATH" ;; esac
command -v cargo >/dev/null || die "cargo not found: install the Rust toolchain (rustup) first"

# --- 2. Python venv ----------------------------------------------------------------------------
# The wheel is cp311: the venv must run CPython 3.11 (is_py311, find_py311: ci/lib.sh).

if [ -x "$VENV/bin/python" ] && ! is_py311 "$VENV/bin/python"; then
	say "$VENV does not run Python 3.11; recreating it"
	rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
	PY=$(find_py311) || { apt_install python3.11 python3.11-venv; PY=$(find_py311) || die "no Python 3.11"; }
	say "creating $VENV with $PY"
	if ! "$PY" -m venv "$VENV"; then
		rm -rf "$VENV"
		apt_install python3.11-venv
		"$PY" -m venv "$VENV"
	fi
fi
VPY="$VENV/bin/python"
pip_install() { say "pip install $*"; "$VPY" -m pip install -q --disable-pip-version-check "$@"; }

if ! "$VPY" - <<EOF 2>/dev/null; then
import importlib.metadata as m, sys
sys.exit(m.version("nixl-cu12") != "$NIXL_WHEEL_VERSION")
EOF
	# --no-deps: the wheel's declared dependencies (torch, ...) are not needed for DRAM/OBJ.
	pip_install --no-deps "nixl-cu12==$NIXL_WHEEL_VERSION"
fi
"$VPY" -c 'import numpy, pytest' 2>/dev/null || pip_install numpy pytest
"$VPY" -c 'import nixl_cu12._api' || die "nixl_cu12 does not import in $VENV"

# Other NIXL releases for tests/e2e/test_nixl_versions.py (1.0.0: same engine ABI; 0.10.1: older,
# refused), each in its own --target dir, plus a stub `torch` that their _api.py imports.
OLD_WHEELS="$ROOT/.cache/nixl-wheels"
for v in 1.0.0 0.10.1; do
	[ -d "$OLD_WHEELS/$v/nixl_cu12" ] && continue
	say "pip install --target .cache/nixl-wheels/$v nixl-cu12==$v"
	"$VPY" -m pip install -q --disable-pip-version-check --no-deps --target "$OLD_WHEELS/$v" "nixl-cu12==$v" ||
		say "could not install nixl-cu12==$v; its version test will be skipped"
done
mkdir -p "$OLD_WHEELS/torch-stub/torch"
echo 'class Tensor: """Stands in for torch.Tensor: old nixl_cu12 wheels import torch at load."""' \
	>"$OLD_WHEELS/torch-stub/torch/__init__.py"

# --- 3. release build --------------------------------------------------------------------------
say "cargo build --release"
cargo build --release --workspace
for so in target/release/libplugin_DAOS.so target/release/libdaos_sim.so; do
	[ -f "$so" ] || die "the build did not produce $so"
done
say "ready: $(cd target/release && ls libplugin_DAOS.so libdaos_sim.so | tr '\n' ' ')"
