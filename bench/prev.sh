#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Builds this plugin as of an earlier commit REV (default: the parent of HEAD) as NIXL backend
# DAOSPREV, for bench.kv_bench's contender real-prev: a change to the data path measured pass by
# pass against the build before it, in one run on one engine.
#   bash bench/prev.sh [REV]     # prints the library's path; export NIXL_DAOS_PREV_PLUGIN=<it>
# The build lives in target/prev/<rev> (a git worktree of REV, its shim's backend name changed
# from DAOS to DAOSPREV so that NIXL loads it beside the current build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rev=$(git -C "$root" rev-parse --short "${1:-HEAD~1}")
dir="$root/target/prev/$rev"
if [ ! -d "$dir/.git" ] && [ ! -f "$dir/.git" ]; then
	git -C "$root" worktree add --force --detach "$dir" "$rev" >&2
fi
sed -i 's/return "DAOS";/return "DAOSPREV";/' "$dir/src/shim/plugin.cpp"
grep -q '"DAOSPREV"' "$dir/src/shim/plugin.cpp" || { echo "prev.sh: $rev's shim does not name its backend where expected" >&2; exit 1; }
(cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --release -p nixl-daos >&2)
so="$dir/target/release/libplugin_DAOS.so"
[ -f "$so" ] || { echo "prev.sh: no $so" >&2; exit 1; }
echo "$so"
