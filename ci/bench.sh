#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The KV-offload benchmark (bench/kv_bench.py) through the real NIXL 1.5.1 agent, on up to three
# storages, with the fold policies side by side (default = fold=auto, fold, nofold):
#   1. the embedded daos-sim, with no modeled cost and with a modeled network (+net: a link at
#      half this machine's copy rate with the reference testbed's per-RPC cost in bytes; see the
#      comment above NetModel in bench/kv_net.py), against NIXL's POSIX backend on /dev/shm and
#      an in-process memcpy, all through one harness;
#   2. a real DAOS engine: the user's pool when DAOS_POOL and NIXL_DAOS_LIBDAOS are set, else a
#      single-node DAOS 2.8 started here from ../shared/daos/daos-local.sh (as root, under the
#      lock /tmp/daos-real.lock, stopped after), at --real-scale of the workloads (default 0.1);
#      skipped when neither is there (--no-real skips it always);
#   3. on that real engine, bench/calibrate.py: fits daos-sim's cost model to it and prints the
#      issue's four layouts' fold/nofold ratios on both, PASS when within 25%;
#   4. bench/side_by_side.py: one table of real DAOS, daos-sim and POSIX;
#   5. bench/evict_bench.py: writes into a full pool with eviction against an empty pool, on
#      daos-sim and on a fresh 2 GiB pool of a local engine.
# Writes are timed to new keys (the headline write, as KV offload writes each block once) and
# again as overwrites. Prints the tables, the ratios and a PASS/MISS line per target; results go
# to results/<timestamp>/{sim,real}/. About 5 minutes on 2 cores. Same set-up as ci/test.sh.
# Extra arguments go to the daos-sim run of kv_bench.py (default --scale 0.4), e.g.
#   ci/bench.sh --scale 1                        # the full workloads (~10 minutes)
#   ci/bench.sh --scale 0.1 --real-scale 0.05    # a quick run
#   ci/bench.sh --workloads ref --contenders daos,memcpy
# Exits non-zero when a read-back is wrong or a run fails; a MISSed target is reported, and
# fails the run only with --strict.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

"$VPY" -c 'import matplotlib' 2>/dev/null || pip_install matplotlib

strict=0
real=1
real_scale=0.1
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--strict) strict=1 ;;
	--no-real) real=0 ;;
	--real-scale) real_scale=$2; shift ;;
	*) args+=("$1") ;;
	esac
	shift
done

# daos-sim at 0.4 of the full workloads unless told otherwise: new-key writes allocate the
# simulator's memory inside the clock, and the whole run stays around 5 minutes on 2 cores.
case " ${args[*]:-} " in *" --scale "*) ;; *) args=(--scale 0.4 "${args[@]}") ;; esac
out="results/$(date +%Y%m%d-%H%M%S)"
say "bench/kv_bench.py ${args[*]:-} (daos-sim, POSIX, memcpy)"
rc=0
# The outer timeout is a backstop for a hang inside a C call, where Python cannot interrupt.
timeout --signal=KILL 3600 "$VPY" bench/kv_bench.py --out "$out/sim" "${args[@]}" || rc=$?

# The real engine: the DAOS contenders only, at a smaller scale (a RAM-backed pool of a few GiB,
# and TCP on loopback moves ~1 GB/s), each workload on a container of its own.
real_rc=0
real_args=(--real --scale "$real_scale" --workloads ref,small,lmcache --reps 2 --out "$out/real")
# Both real-engine runs in one command line: kv_bench, then the calibration (its own exit status
# is reported, not fatal: a MISS is a finding).
real_cmd=(bash -c '"$1" bench/kv_bench.py "${@:3}"; rc=$?
	"$1" bench/calibrate.py --out "$2" || echo "calibrate.py: exit $? (see above)"
	exit $rc' _ "$VPY" "$out/calibrate" "${real_args[@]}")
local_daos="${NIXL_DAOS_LOCAL:-$ROOT/../shared/daos/daos-local.sh}"
if [ "$real" = 0 ]; then
	say "real DAOS: skipped (--no-real)"
elif [ -n "${DAOS_POOL:-}" ] && [ -n "${NIXL_DAOS_LIBDAOS:-}" ]; then
	say "real DAOS: pool $DAOS_POOL through $NIXL_DAOS_LIBDAOS"
	timeout --signal=KILL 2400 "${real_cmd[@]}" || real_rc=$?
elif [ -x "$local_daos" ] && [ "$(id -u)" = 0 ]; then
	say "real DAOS: a single-node engine from $local_daos (waiting for /tmp/daos-real.lock)"
	# A pool larger than the script's default: new-key writes cannot free the keys before them.
	flock -w 1800 /tmp/daos-real.lock env DAOS_LOCAL_SCM_GB=8 DAOS_LOCAL_POOL_SIZE=6GiB bash -c '
		D=$1; shift
		log=$(mktemp)
		if ! "$D" start >"$log" 2>&1; then tail -20 "$log"; "$D" stop >/dev/null 2>&1; exit 3; fi
		eval "$("$D" env)"
		timeout --signal=KILL 1800 "$@"; rc=$?
		"$D" stop >/dev/null 2>&1
		exit $rc' _ "$local_daos" "${real_cmd[@]}" || real_rc=$?
else
	say "real DAOS: none (no DAOS_POOL with NIXL_DAOS_LIBDAOS, and no $local_daos to start as root)"
fi
case $real_rc in
0 | 2) ;;
3) say "real DAOS: the engine did not start; the table shows daos-sim and POSIX only" ;;
*) say "real DAOS: the run failed (exit $real_rc)"; [ $rc = 0 ] || [ $rc = 2 ] && rc=1 ;;
esac

if [ -f "$out/sim/results.json" ]; then
	"$VPY" bench/side_by_side.py "$out/sim" $([ -f "$out/real/results.json" ] && echo "$out/real")
fi

# 5. Eviction: writes with the pool full and eviction making room, beside the same writes into
# the empty pool (bench/evict_bench.py), on daos-sim and, with a local engine, on a fresh 2 GiB
# pool of its own (the reclaim delay of real DAOS makes that run take 4-5 minutes).
say "bench/evict_bench.py --sim (eviction on daos-sim)"
timeout --signal=KILL 900 "$VPY" bench/evict_bench.py --sim || { say "evict_bench.py --sim failed"; rc=1; }
if [ "$real" = 1 ] && [ -x "$local_daos" ] && [ "$(id -u)" = 0 ] && [ -z "${DAOS_POOL:-}" ]; then
	say "bench/evict_bench.py --real (a fresh engine with a 2 GiB pool; waiting for /tmp/daos-real.lock)"
	flock -w 1800 /tmp/daos-real.lock env DAOS_LOCAL_SCM_GB=4 DAOS_LOCAL_POOL_SIZE=2GiB DAOS_LOCAL_TARGETS=2 bash -c '
		D=$1 VPY=$2
		log=$(mktemp)
		if ! "$D" start >"$log" 2>&1; then tail -20 "$log"; "$D" stop >/dev/null 2>&1; exit 3; fi
		eval "$("$D" env)"
		"$DAOS_LOCAL_BIN/daos" cont create "$DAOS_POOL" evict-bench >/dev/null
		DAOS_CONT=evict-bench timeout --signal=KILL 1800 "$VPY" bench/evict_bench.py --real --pool-mib 2048; rc=$?
		"$D" stop >/dev/null 2>&1
		exit $rc' _ "$local_daos" "$VPY" || { say "evict_bench.py --real failed"; rc=1; }
fi

case $rc in
0) say "benchmark done: every read verified, every target met" ;;
2) if [ "$strict" = 1 ]; then die "targets missed (see the MISS lines)"; else say "benchmark done: every read verified; some targets missed (see the MISS lines)"; fi ;;
137) die "the benchmark was killed after 3600 s (a hang)" ;;
*) die "the benchmark failed (exit $rc)" ;;
esac
