#!/usr/bin/env bash
# The KV-offload benchmark (bench/kv_bench.py): the DAOS plugin through the real NIXL 1.5.1 agent
# on the embedded daos-sim, with and without folding, with no modeled cost and with a modeled
# network (a link at half this machine's copy rate with the reference testbed's per-RPC cost in
# bytes; see the comment above NetModel in bench/kv_bench.py), against NIXL's POSIX backend on
# /dev/shm and an in-process memcpy, all through one harness (request handles prepared once and
# reposted each rep; --handles per-transfer for the old way). Prints the table, the ratios and a
# PASS/MISS line per target; results go to results/<timestamp>/. About 3.5 minutes on 2 cores.
# Same set-up as ci/test.sh. Extra arguments go to kv_bench.py, e.g.
#   ci/bench.sh --scale 0.1                      # a quick run
#   ci/bench.sh --workloads ref --contenders daos,memcpy
# Exits non-zero when a read-back is wrong or the run fails; a MISSed target is reported, and
# fails the run only with --strict.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

"$VPY" -c 'import matplotlib' 2>/dev/null || pip_install matplotlib

strict=0
args=()
for a in "$@"; do
	case $a in
	--strict) strict=1 ;;
	*) args+=("$a") ;;
	esac
done

say "bench/kv_bench.py ${args[*]:-}"
rc=0
# The outer timeout is a backstop for a hang inside a C call, where Python cannot interrupt.
timeout --signal=KILL 3600 "$VPY" bench/kv_bench.py "${args[@]}" || rc=$?
case $rc in
0) say "benchmark done: every read verified, every target met" ;;
2) if [ "$strict" = 1 ]; then die "targets missed (see the MISS lines)"; else say "benchmark done: every read verified; some targets missed (see the MISS lines)"; fi ;;
137) die "the benchmark was killed after 3600 s (a hang)" ;;
*) die "the benchmark failed (exit $rc)" ;;
esac
