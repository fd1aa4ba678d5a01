#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The real-engine steps of ci/bench.sh, on the pool in DAOS_POOL through the libdaos in
# NIXL_DAOS_LIBDAOS (the user's, or the local engine ci/bench.sh started):
#   1. bench.kv_bench --real: the plugin with its defaults (real-default; and NIXL POSIX on dfuse
#      when NIXL_DAOS_DFUSE_DIR names a mount), every key in flight (window 64) -> OUT/real;
#   2. the same workloads one request at a time (--window 1: a KV fetch on a request's critical
#      path), the plugin and the dfuse contender -> OUT/real-depth1;
#   3. bench/ceiling: raw libdaos (no NIXL) issuing the plugin's RPCs (one per dkey, its `sized`
#      shape; without the plugin's record and checksums) for the layouts of steps 1 and 2, in
#      one-round passes around them (before 1, between 1 and 2, after 2), merged into
#      OUT/real-ceiling/ceiling.json by bench.ceiling_merge;
#   3b. when NIXL_DAOS_CPP_SRC or NIXL_DAOS_DFS_SRC names the source of another DAOS plugin (the
#      reference C++ plugin, NIXL PR #2261's libdfs backend; bench/reference.sh builds them): the
#      plugin and those plugins, pass by pass, at window 64 and 1 -> OUT/real-peers,
#      OUT/real-peers-depth1 (runs of their own: more contenders in steps 1 and 2 would unbalance
#      their pass order, kv_passes.order, which the pass-by-pass ratios rest on);
#   4. bench.many_clients: 1, 2, 4 and 8 client processes on the pool, aggregate GB/s and
#      fairness, every byte verified -> OUT/many-clients.
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
# The ceiling runs in passes of one round around kv_bench's steps, each pass in a container of its
# own destroyed at its end (a destroy between its measurements would put the engine's reclaim
# beside the next one), and bench.ceiling_merge keeps every round and the best. Run only first,
# on the empty pool, it met another engine state than kv_bench later: in one run 8 MiB values
# read at depth 1 at 1.54 GB/s first, then 0.92-1.04 GB/s in passes interleaved with kv_bench
# (0.83-0.87), while at depth all the first pass on a fresh engine wrote far slower. A pass's
# container reclaim falls on what follows it, so the depth-1 step gets an untimed warm-up.
read -r layouts < <("$vpy" -c '
import sys
from bench.kv_workloads import make_workloads
print(",".join("%dx%dx%d" % (w.keys, w.layers, w.block) for w in make_workloads(float(sys.argv[1]), sys.argv[2].split(","))))' \
	"$scale" "$workloads")
# The other DAOS plugins for NIXL (step 3b), each when the caller names its source: the
# reference C++ plugin (gluesys/nixl-daos, NIXL_DAOS_CPP_SRC) as contender real-cpp, NIXL PR
# #2261's libdfs backend (NIXL_DAOS_DFS_SRC) as real-dfs. bench/reference.sh builds them; no
# third-party code is kept here. A build that fails leaves that peer out, with a line: a finding.
peers=""
for kind in cpp dfs; do
	src_var=NIXL_DAOS_${kind^^}_SRC so_var=NIXL_DAOS_${kind^^}_PLUGIN
	if [ -n "${!src_var:-}" ] && [ -z "${!so_var:-}" ]; then
		mkdir -p "$out"
		if so=$(bash bench/reference.sh $kind "${!src_var}" 2>"$out/reference-$kind-build.log" | tail -1) && [ -f "$so" ]; then
			export "$so_var=$so"
			echo "== bench-real: the $kind plugin: $so" >&2
		else
			echo "== bench-real: the $kind plugin did not build (left out; log: $out/reference-$kind-build.log): $(tail -1 "$out/reference-$kind-build.log")" >&2
		fi
	fi
	if [ -f "${!so_var:-}" ]; then
		peers="$peers,real-$kind"
	elif [ -n "${!so_var:-}" ]; then
		echo "== bench-real: $so_var=${!so_var} is not a file (the $kind plugin is left out)" >&2
	fi
done
mkdir -p "$out/real-ceiling"
passes=()
ceiling_pass() { # ceiling_pass <name>: one round of both depths -> OUT/real-ceiling/<name>.json
	step "bench/ceiling ($1)" bash bench/ceiling.sh --rounds 1 --layouts "$layouts" --window 64 --shapes sized \
		--depths all,1 --out "$out/real-ceiling/$1.json"
	passes+=("$out/real-ceiling/$1.json")
}
ceiling_pass before
step "bench.kv_bench --real" "$vpy" -m bench.kv_bench --real --scale "$scale" --workloads $workloads --reps 1 \
	--window 64 --out "$out/real" $strict
ceiling_pass between
step "bench.kv_bench --real --window 1" "$vpy" -m bench.kv_bench --real --window 1 --real-warmup-gib 0.25 --no-plot \
	--contenders "real-default${NIXL_DAOS_DFUSE_DIR:+,posix-dfuse}" --scale "$scale" --workloads $workloads --reps 1 \
	--out "$out/real-depth1" $strict
ceiling_pass after
have=()
for f in "${passes[@]}"; do [ -f "$f" ] && have+=("$f"); done
# ceiling.sh exits 0 without a file when it skips (no compiler, no pool): nothing to merge then.
[ ${#have[@]} = 0 ] || step "bench.ceiling_merge" "$vpy" -m bench.ceiling_merge "$out/real-ceiling/ceiling.json" "${have[@]}"
if [ -n "$peers" ]; then
	# The C++ plugin's worker pool at 8 threads (NIXL_DAOS_CPP_THREADS), the best of 2, 4, 8, 16
	# and its default 64 here: on 2 cores, at 64 (and 16) its 4 KiB new-key writes fell to
	# 0.002-0.008 GB/s, and at 64 its 8 MiB reads to 0.5 (ours 1.3 in the same passes); at 8,
	# 0.07 and 0.93. The libdfs backend runs with its defaults. Ours reads no NIXL_DAOS_THREADS.
	threads=${NIXL_DAOS_CPP_THREADS:-${NIXL_DAOS_THREADS:-8}}
	# Ours and one peer balance over 4 passes, ours and two over 6 (kv_passes.order). Prepared
	# handles, as in steps 1 and 2, which favours the libdfs backend: its prepXfer opens (and for
	# a new key creates) its files, off the clock then; made per transfer (--handles
	# per-transfer, LMCache's way) its 4 KiB requests fell from 0.05-0.06 to 0.01-0.02 GB/s. A peer that
	# raises is left out (a row with a note); one that crashes the process, or returns wrong
	# bytes, fails the step.
	np=4
	[ "${peers//[^,]/}" = "," ] || np=6
	for win in 64 1; do
		sub=real-peers
		[ $win = 64 ] || sub=real-peers-depth1
		step "bench.kv_bench --real --contenders real-default$peers --window $win" env NIXL_DAOS_THREADS="$threads" \
			"$vpy" -m bench.kv_bench --real --window $win --real-warmup-gib 0.25 --no-plot \
			--contenders "real-default$peers" --passes $np --scale "$scale" --workloads $workloads --reps 1 \
			--out "$out/$sub" $strict
	done
fi
# Last, so that its processes share the engine with nothing of the steps above.
step "bench.many_clients --real" "$vpy" -m bench.many_clients --real --out "$out/many-clients"
exit $rc
