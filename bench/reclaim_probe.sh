#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
#
# Space-reclaim facts on a REAL DAOS 2.8 engine (single node, tmpfs, ../shared/daos/daos-local.sh),
# for the eviction code: daos_pool_info_t layout, how daos_pool_query free space tracks writes,
# when -DER_NOSPACE hits, how long after daos_obj_punch_dkeys the space (and writes) come back,
# write/punch steady state near full, and a few object-API semantics. Findings:
# bench/RECLAIM_FINDINGS.md. The probe itself is bench/reclaim_probe.c (object API, synchronous).
#
#   sudo bash bench/reclaim_probe.sh [OUTDIR]      (as root; default OUTDIR /tmp/reclaim_probe.<time>)
#
# It holds /tmp/daos-real.lock throughout (one real DAOS system fits on the machine), starts
# DAOS with a small pool (2 GiB, 4 GiB tmpfs, 2 targets), builds the probe with gcc against the
# package's headers and libdaos, runs: layout, qlat + sem, reclaim (2 rounds), then on a fresh
# system the writer+puncher steady state, then on a fresh system a fill with 8 MiB keys; it always
# stops DAOS at the end. About 5 minutes. Logs: OUTDIR/*.log (OUTDIR/all.log has everything).
# Knobs: RP_STEADY_SECS (90), RP_STEADY_PCT (90: the puncher keeps live keys at this % of the
# count that filled the pool), RP_SKIP_F8=1 skips the 8 MiB fill.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The DAOS package beside the repository (../shared/daos), or NIXL_DAOS_LOCAL.
DL=${NIXL_DAOS_LOCAL:-$(cd "$HERE/../.." && pwd)/shared/daos/daos-local.sh}
OUT=${1:-/tmp/reclaim_probe.$(date -u +%Y%m%dT%H%M%SZ)}
STEADY_SECS=${RP_STEADY_SECS:-90}
STEADY_PCT=${RP_STEADY_PCT:-90}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/all.log") 2>&1

exec 9>/tmp/daos-real.lock
echo "== waiting for /tmp/daos-real.lock"
flock 9
echo "== lock held $(date -u +%FT%TZ)"

stop() { "$DL" stop || true; }
trap stop EXIT

start() {
	echo "== start $(date -u +%FT%TZ) load: $(uptime)"
	DAOS_LOCAL_POOL_SIZE=2GiB DAOS_LOCAL_SCM_GB=4 DAOS_LOCAL_TARGETS=2 "$DL" start >/dev/null
	eval "$("$DL" env)"
	echo "== up $(date -u +%FT%TZ) pool=$DAOS_POOL libdaos=$NIXL_DAOS_LIBDAOS"
}

step() { # step NAME CONT ARGS...: create CONT (unless it exists), run the probe, log to OUT/NAME.log
	local name=$1 cont=$2
	shift 2
	echo "== $name $(date -u +%FT%TZ) load: $(uptime)"
	"$DAOS_LOCAL_BIN/daos" cont query "$DAOS_POOL" "$cont" >/dev/null 2>&1 ||
		"$DAOS_LOCAL_BIN/daos" cont create "$DAOS_POOL" "$cont" >/dev/null
	"$PROBE" "$DAOS_POOL" "$cont" "$@" | tee "$OUT/$name.log"
}

start
LIB=$(dirname "$NIXL_DAOS_LIBDAOS")
INC=$(dirname "$LIB")/include
PROBE=$OUT/reclaim_probe
gcc -O2 -Wall -o "$PROBE" "$HERE/reclaim_probe.c" -I"$INC" -L"$LIB" -Wl,-rpath,"$LIB" \
	-ldaos -lgurt -luuid -lpthread
echo "== built $PROBE against $INC and $LIB"

"$PROBE" layout | tee "$OUT/layout.log"
grep -n -A1 '^daos_pool_query(' "$INC/daos_pool.h" | tee -a "$OUT/layout.log"
step qlat c-sem qlat
step sem c-sem sem
step reclaim c-rec reclaim 2
step qlat-full c-rec qlat

stop
start
step steady c-st steady "$STEADY_SECS" "$STEADY_PCT"

if [ "${RP_SKIP_F8:-0}" != 1 ]; then
	stop
	start
	step fill8 c-f8 fill 8
fi
echo "== done $(date -u +%FT%TZ) load: $(uptime); logs in $OUT"
