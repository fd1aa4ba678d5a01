#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Checks that the committed libdaos declarations (src/daos/bindings.rs) equal what bindgen
# produces now from the DAOS headers: DAOS_PREFIX/include when set (real DAOS headers), else
# daos-sim's. Needs libclang (installs libclang-dev when missing and run as root).
# Usage: bash ci/check-bindings.sh [--update]   (--update rewrites the committed file)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source ci/lib.sh
ensure_libclang
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
NIXL_DAOS_BINDINGS_OUT="$tmp" cargo build --release -p nixl-daos --features bindgen --quiet
# The committed file is the generated one behind a 4-line header.
if [ "${1:-}" = --update ]; then
	{ head -4 src/daos/bindings.rs; cat "$tmp"; } >src/daos/bindings.rs.new
	mv src/daos/bindings.rs.new src/daos/bindings.rs
	say "src/daos/bindings.rs updated"
elif tail -n +5 src/daos/bindings.rs | diff -u - "$tmp"; then
	say "src/daos/bindings.rs matches bindgen's output from ${DAOS_PREFIX:-daos-sim}'s headers"
else
	die "src/daos/bindings.rs differs from bindgen's output (above); run: bash ci/check-bindings.sh --update"
fi
