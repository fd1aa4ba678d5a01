#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The ceiling (issue 18): builds bench/ceiling (raw libdaos, no NIXL) and runs it on the pool in
# DAOS_POOL through the libdaos in NIXL_DAOS_LIBDAOS (as `daos-local.sh env` sets them, or
# daos-sim: DAOS_POOL=sim NIXL_DAOS_LIBDAOS=target/release/libdaos_sim.so).
#   bash bench/ceiling.sh [--rounds N] [--out FILE] [--layouts ...] [--queues N] ...   (--help)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -z "${DAOS_POOL:-}" || -z "${NIXL_DAOS_LIBDAOS:-}" ]]; then
    echo "SKIP: the ceiling needs DAOS_POOL and NIXL_DAOS_LIBDAOS (eval \"\$(daos-local.sh env)\", or daos-sim's pool 'sim')"
    exit 0
fi
cargo build --release --quiet --manifest-path "$here/ceiling/Cargo.toml" --target-dir "$here/ceiling/target" ${CARGO_BUILD_JOBS:+-j "$CARGO_BUILD_JOBS"}
exec "$here/ceiling/target/release/nixl-daos-ceiling" "$@"
