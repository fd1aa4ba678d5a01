#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The real-engine steps of ci/bench.sh, on the pool in DAOS_POOL through the libdaos in
# NIXL_DAOS_LIBDAOS (the user's, or the local engine ci/bench.sh started):
#   1. bench/ceiling: raw libdaos (no NIXL) issuing the default policy's RPCs for the layouts
#      of step 2, at depth all and 1 -> OUT/real-ceiling/ceiling.json;
#   2. bench.kv_bench --real: the fold policies (and NIXL POSIX on dfuse when NIXL_DAOS_DFUSE_DIR
#      names a mount), every key in flight (window 64) -> OUT/real;
#   3. the same workloads one request at a time (--window 1: a KV fetch on a request's critical
#      path), the default policy and the dfuse contender -> OUT/real-depth1;
#   4. bench.calibrate: daos-sim's cost model fitted to this engine -> OUT/calibrate.
#     bash ci/bench-real.sh VPY OUT SCALE [--strict]
# Every step runs even when one before it failed; the exit status is the first non-zero one
# (2 with --strict: a target MISSed).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ $# -ge 3 ] || {
	echo "usage: bash ci/bench-real.sh VPY OUT SCALE [--strict]" >&2
	exit 2
}
vpy=$1 out=$2 scale=$3 strict=${4:-}
rc=0
step() { # step <name> <command...>: runs it, keeps the first failure's status
	local name=$1 s=0
	shift
	"$@" || s=$?
	if [ $s != 0 ]; then
		echo "== bench-real: $name: exit $s" >&2
		[ $rc != 0 ] || rc=$s
	fi
}
workloads=ref,small,lmcache
# The ceiling first, on the layouts kv_bench will measure (keys x descriptors x block at this
# scale) and its window: it keeps one container for its whole run (a destroy between its
# measurements would put the engine's reclaim beside the next one), so it runs while the pool is
# still empty, and its container's reclaim falls in kv_bench's untimed warm-up. 2 rounds of both
# depths at 0.1 scale write about 4 GB.
read -r layouts < <("$vpy" -c '
import sys
from bench.kv_workloads import make_workloads
print(",".join("%dx%dx%d" % (w.keys, w.layers, w.block) for w in make_workloads(float(sys.argv[1]), sys.argv[2].split(","))))' \
	"$scale" "$workloads")
mkdir -p "$out/real-ceiling"
step "bench/ceiling" bash bench/ceiling.sh --rounds 2 --layouts "$layouts" --window 64 --shapes sized \
	--depths all,1 --out "$out/real-ceiling/ceiling.json"
step "bench.kv_bench --real" "$vpy" -m bench.kv_bench --real --scale "$scale" --workloads $workloads --reps 2 \
	--window 64 --out "$out/real" $strict
step "bench.kv_bench --real --window 1" "$vpy" -m bench.kv_bench --real --window 1 --real-warmup-gib 0 --no-plot \
	--contenders "real-default${NIXL_DAOS_DFUSE_DIR:+,posix-dfuse}" --scale "$scale" --workloads $workloads --reps 2 \
	--out "$out/real-depth1" $strict
step "bench.calibrate" "$vpy" -m bench.calibrate --out "$out/calibrate" $strict
exit $rc
