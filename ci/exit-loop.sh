#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Crash rate of interpreter exit with DAOS fetches in flight, on a real single-node DAOS engine:
# runs tests/e2e/safety_exit_in_flight.py N times (default 40) and counts the runs that did not
# exit 0, and (from the plugin's debug log) the runs that still had fetches inside DAOS when the
# exit began. Each crash leaves a core; its backtraces (every thread) go to target/exit-loop/.
#
#   bash ci/exit-loop.sh [N] [scenario.py]
#
# Holds /tmp/daos-real.lock from the engine's start to its stop (one engine per machine), like
# the real pass of ci/test.sh; needs root (daos-local.sh mounts a tmpfs) and a release build.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${1:-40}
SCENARIO=${2:-$ROOT/tests/e2e/safety_exit_in_flight.py}
REAL_DAOS=$(cd "$ROOT/.." && pwd)/shared/daos/daos-local.sh
PY=$ROOT/.venv/bin/python
OUT=$ROOT/target/exit-loop
LOCK=/tmp/daos-real.lock
mkdir -p "$OUT"

(
	exec 9>"$LOCK"
	flock 9
	trap 'bash "$REAL_DAOS" stop >/dev/null 2>&1 || true' EXIT
	trap 'exit 130' INT TERM
	export DAOS_LOCAL_TARGETS=${DAOS_LOCAL_TARGETS:-2}
	bash "$REAL_DAOS" start >"$OUT/start.log" 2>&1 || { tail -20 "$OUT/start.log"; exit 1; }
	eval "$(bash "$REAL_DAOS" env)"
	"$DAOS_LOCAL_BIN/daos" cont create "$DAOS_POOL" nixl-exit >>"$OUT/start.log" 2>&1 || exit 1
	export NIXL_DAOS_TESTBED=1 DAOS_CONT=nixl-exit
	ulimit -c unlimited
	export NIXL_LOG_LEVEL=DEBUG
	crashes=0 inflight=0
	for i in $(seq 1 "$N"); do
		dir=$(mktemp -d "$OUT/run.XXXX")
		(cd "$dir" && timeout 120 "$PY" "$SCENARIO" >"$dir/out" 2>&1)
		rc=$?
		grep -q "process exit: .*DAOS operation\|lane abandons" "$dir/out" && inflight=$((inflight + 1))
		if [ "$rc" != 0 ]; then
			crashes=$((crashes + 1))
			echo "run $i: exit $rc ($dir)"
			core=$(ls "$dir"/core* 2>/dev/null | head -1)
			if [ -n "$core" ]; then
				gdb -q -batch -iex "set auto-load python-scripts off" -ex "info threads" -ex "thread apply all bt 30" "$PY" "$core" >"$dir/bt.txt" 2>&1
				rm -f "$core"
				grep -m1 -A12 "received signal\|^#0" "$dir/bt.txt" || true
			fi
		else
			rm -rf "$dir"
		fi
	done
	echo "exit-loop: $crashes of $N runs did not exit cleanly; $inflight had fetches inside DAOS at exit ($(basename "$SCENARIO"))"
	# Non-zero when any run crashed (ci/test.sh --long fails then).
	[ "$crashes" = 0 ]
)
