#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# CI entry point (via .ci/run): set-up and release build (ci/setup.sh), the Rust tests of the whole
# workspace, then the end-to-end tests through the real NIXL 1.5.1 agent twice: against daos-sim,
# and against a real single-node DAOS 2.8 engine when one can be had (../shared/daos/daos-local.sh
# beside the repo, run as root; otherwise that pass is skipped with one line saying why).
# LMCache's own engine drives the plugin too (tests/consumers, in the consumers venv that
# ci/consumers.sh sets up once per machine; skipped with one line when it cannot be had): on
# daos-sim, and across processes in the real pass. Dynamo KVBM's object-tier descriptor patterns
# go through NIXL's Rust crate against a NIXL built from ../shared/third_party (ci/kvbm.sh, cached
# per machine, about 11 minutes cold; skipped with one line when it cannot be had), and the
# top-level meson build compiles the plugin against that NIXL's headers (ci/meson-standalone.sh).
# vLLM (CPU) serves a small local model with LMCache's connector storing its KV cache through the
# plugin (ci/vllm-e2e.sh, its venv cached per machine; skipped with one line when it cannot be
# had): within one process on daos-sim, and across two processes in the real pass.
# Exits non-zero on any failure. Extra arguments go to pytest (e.g. ci/test.sh -k fold).
#
# The real pass holds /tmp/daos-real.lock from the engine's start to its stop (one engine per
# machine: its control port is fixed) and always stops it, also on failure or interruption.
# DAOS_LOCAL_TARGETS (default 2) sets the engine's targets; a user with their own pool runs
# ci/e2e-testbed.sh instead.
# --long (first argument) runs the randomized model check (tests/e2e/test_model.py) for 10
# minutes instead of 40 s (NIXL_DAOS_MODEL_SECONDS and NIXL_DAOS_MODEL_SEED set it directly), and
# after the other passes the slow checks: the exit crash loop on a real engine (ci/exit-loop.sh,
# 40 runs, about 2 minutes) and the in-tree NIXL build with its DAOS tests (ci/nixl-intree.sh
# against the NIXL source in ../shared/third_party, about 11 minutes the first time).
# A failover pass on three real engines runs in every mode (tests/e2e/test_real_failover.py).
set -euo pipefail
LONG=0
if [[ "${1:-}" == "--long" ]]; then
    shift
    LONG=1
    export NIXL_DAOS_MODEL_SECONDS="${NIXL_DAOS_MODEL_SECONDS:-600}"
fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

say "ci/check-bindings.sh (committed libdaos declarations == bindgen's output)"
bash ci/check-bindings.sh
bash ci/lint.sh
bash ci/lint-py.sh

say "cargo test --release --workspace"
cargo test --release --workspace

# The wheel users install (ci/package.sh): built to load with glibc 2.28 and libstdc++ of GCC 8,
# which objdump -T of the shipped plugin checks; tests/e2e/test_package.py installs it.
say "the wheel (ci/package.sh)"
bash ci/package.sh
# The plugin the wheel ships is linked otherwise than target/release's: the same checks through NIXL.
PORTABLE=target/package/wheel/libplugin_DAOS.so # the file the wheel ships
NIXL_DAOS_LIBDAOS="$ROOT/target/release/libdaos_sim.so" "$VPY" tests/shim/check_nixl.py "$PORTABLE" \
	--param pool=sim --param container=shimcheck --param create_container=true --fail-param stage_bytes=1k >/dev/null 2>&1 ||
	die "shim check of the wheel's plugin (on daos-sim) failed (run: $VPY tests/shim/check_nixl.py $PORTABLE ...; see ci/test.sh)"
"$VPY" tests/shim/check_vtable.py "$PORTABLE" >/dev/null || die "vtable check of the wheel's plugin failed"

say "shim ABI checks (tests/shim)"
# Our vtable slot by slot against the wheel's POSIX engine; the shim alone (stub engine) and the
# whole plugin (on daos-sim) through the real NIXL agent.
"$VPY" tests/shim/check_vtable.py target/release/libplugin_DAOS.so >/dev/null || die "vtable check failed (run: $VPY tests/shim/check_vtable.py)"
shimstub=$(mktemp -d)
bash tests/shim/build-standalone.sh "$shimstub" >/dev/null
"$VPY" tests/shim/check_nixl.py "$shimstub/libplugin_DAOS.so" --fail-param stub_fail=1 >/dev/null 2>&1 ||
	die "shim check (stub engine) failed (run: $VPY tests/shim/check_nixl.py $shimstub/libplugin_DAOS.so --fail-param stub_fail=1)"
NIXL_DAOS_LIBDAOS="$ROOT/target/release/libdaos_sim.so" "$VPY" tests/shim/check_nixl.py target/release/libplugin_DAOS.so \
	--param pool=sim --param container=shimcheck --param create_container=true --fail-param stage_bytes=1k >/dev/null 2>&1 ||
	die "shim check (plugin on daos-sim) failed (run it without >/dev/null: see ci/test.sh)"
rm -rf "$shimstub"

# The outer timeout is a backstop for a hang inside a C call, where pytest cannot interrupt.
pytest_pass() {
	local what=$1 rc=0
	shift
	timeout --signal=KILL $((900 + ${NIXL_DAOS_MODEL_SECONDS:-0})) "$VPY" -m pytest tests/e2e -v -ra --durations=10 "$@" || rc=$?
	case $rc in
	0) say "$what: all tests passed" ;;
	5) say "ERROR: $what: pytest collected no tests" ;;
	137) say "ERROR: $what: pytest was killed after 900 s (a hang)" ;;
	*) say "ERROR: $what: pytest failed (exit $rc)" ;;
	esac
	return $rc
}

say "pytest tests/e2e against daos-sim"
sim_rc=0
pytest_pass "daos-sim" "$@" || sim_rc=$?

# The consumers venv: cached outside the clone (6.7 GB, about 8 minutes the first time on a
# 2-core VM, nothing afterwards). When it cannot be had, ci/consumers.sh says why in one line
# (exit 3) and the consumers tests are skipped.
say "consumers venv (ci/consumers.sh)"
CPY="" crc=0
CPY=$(bash ci/consumers.sh | tail -n 1) || crc=$?
[ "$crc" = 0 ] || CPY=""
case $crc in
0) ;;
3) say "consumers tests SKIPPED: no consumers venv (see the line above)" ;;
*) die "ci/consumers.sh failed (exit $crc)" ;;
esac
consumers_pass() { # $1: what; runs tests/consumers (NIXL_DAOS_REAL=1 in the env: the real-engine ones)
	local rc=0
	timeout --signal=KILL 600 "$CPY" -m pytest tests/consumers -v -ra --durations=5 -p no:cacheprovider || rc=$?
	case $rc in
	0) say "$1: all tests passed" ;;
	137) say "ERROR: $1: pytest was killed after 600 s (a hang)" ;;
	*) say "ERROR: $1: pytest failed (exit $rc)" ;;
	esac
	return $rc
}
cons_rc=0
if [ -n "$CPY" ]; then
	say "pytest tests/consumers against daos-sim (LMCache's engine through the plugin)"
	consumers_pass "consumers, daos-sim" || cons_rc=$?
fi

# vLLM with LMCache's connector through the plugin, on daos-sim in one process: a repeat of a
# prompt must be a hit of every stored chunk with the recompute's next token. The reduced set
# here (2 stored prompts); ci/bench.sh runs the full one.
VLLM_PROMPTS=${NIXL_DAOS_VLLM_PROMPTS:-2}
vllm_pass() { # $1: what, $2: modes, then more ci/vllm-e2e.sh options
	local rc=0 what=$1 modes=$2
	shift 2
	bash ci/vllm-e2e.sh --modes "$modes" --prompts "$VLLM_PROMPTS" --logs "$ROOT/target/vllm-$modes" "$@" || rc=$?
	case $rc in
	0) say "$what: all checks passed" ;;
	3) say "$what: SKIPPED (see the line above)"; rc=0 ;;
	*) say "ERROR: $what: failed (exit $rc; logs in target/vllm-$modes)" ;;
	esac
	return $rc
}
# The LMCache patch series (upstream/lmcache: DAOS as a backend name, the CPU connector vLLM's
# CPU build needs): each applies to LMCache 0.5.6, its tests pass patched and fail without it,
# in the consumers venv and against vLLM's CPU kernel in the vLLM venv (about 2.5 minutes).
say "the LMCache patch series (upstream/lmcache/check.sh)"
lmc_rc=0
bash upstream/lmcache/check.sh || lmc_rc=$?
[ "$lmc_rc" = 0 ] || say "ERROR: upstream/lmcache/check.sh failed (exit $lmc_rc)"
say "vLLM + LMCache through the plugin on daos-sim (ci/vllm-e2e.sh)"
vllm_rc=0
# Its hits' log-probabilities are kept: the real engine's hits must equal them (below).
VLLM_SIM_JSON=$ROOT/target/vllm-sim.json
rm -f "$VLLM_SIM_JSON"
vllm_pass "vLLM, daos-sim" sim,sim-zeroed --json "$VLLM_SIM_JSON" || vllm_rc=$?

# Dynamo KVBM's object tier through NIXL's Rust crate (nixl-sys) against a NIXL built from
# ../shared/third_party (cached per machine; about 11 minutes cold), on daos-sim. Skipped with
# one line when a prerequisite cannot be had.
say "Dynamo KVBM through nixl-sys (ci/kvbm.sh)"
kvbm_rc=0
bash ci/kvbm.sh || kvbm_rc=$?
[ "$kvbm_rc" = 0 ] || say "ERROR: ci/kvbm.sh failed (exit $kvbm_rc)"
# The top-level meson build against that installed NIXL's headers, proven by the same tests.
say "top-level meson build against the installed NIXL (ci/meson-standalone.sh)"
meson_rc=0
bash ci/meson-standalone.sh || meson_rc=$?
[ "$meson_rc" = 0 ] || say "ERROR: ci/meson-standalone.sh failed (exit $meson_rc)"

REAL_DAOS=$(cd "$ROOT/.." && pwd)/shared/daos/daos-local.sh
LOCK=/tmp/daos-real.lock

# In a subshell: its EXIT trap stops the engine, and the lock (fd 9) is released when the
# subshell and the engine's processes (which inherit it) are gone.
real_pass() (
	exec 9>"$LOCK"
	say "real DAOS: waiting for $LOCK"
	flock 9
	trap 'say "real DAOS: stopping the engine"; bash "$REAL_DAOS" stop >/dev/null 2>&1 || true' EXIT
	trap 'exit 130' INT TERM
	export DAOS_LOCAL_TARGETS=${DAOS_LOCAL_TARGETS:-2}
	local log=$ROOT/target/daos-local-start.log
	say "real DAOS: starting a single-node engine ($DAOS_LOCAL_TARGETS targets) with $REAL_DAOS"
	bash "$REAL_DAOS" start >"$log" 2>&1 || { tail -30 "$log"; say "ERROR: real DAOS: the engine did not start (log: $log)"; exit 1; }
	eval "$(bash "$REAL_DAOS" env)"
	"$DAOS_LOCAL_BIN/daos" cont create "$DAOS_POOL" nixl-ci >>"$log" 2>&1 || { tail -5 "$log"; say "ERROR: real DAOS: daos cont create failed"; exit 1; }
	# NIXL_DAOS_LOCAL lets tests/e2e/test_real_faults.py kill and restart this engine.
	# NIXL_DAOS_LOCAL_STOPS: no restart after the last of them, the trap stops the engine anyway.
	export NIXL_DAOS_TESTBED=1 DAOS_CONT=nixl-ci NIXL_DAOS_LOCAL=$REAL_DAOS NIXL_DAOS_LOCAL_STOPS=1 \
		NIXL_DAOS_TEST_TARGETS=$DAOS_LOCAL_TARGETS
	# Before the e2e pass: its last fault test leaves the engine stopped.
	local crc=0
	if [ -n "$CPY" ]; then
		say "pytest tests/consumers against real DAOS (LMCache across processes)"
		NIXL_DAOS_REAL=1 consumers_pass "consumers, real DAOS" || crc=$?
	fi
	say "vLLM + LMCache through the plugin against real DAOS (process B finds what process A stored)"
	local vref=()
	[ -f "$VLLM_SIM_JSON" ] && vref=(--reference "$VLLM_SIM_JSON")
	vllm_pass "vLLM, real DAOS" real "${vref[@]}" || crc=1
	if [ "$kvbm_rc" = 0 ]; then
		say "Dynamo KVBM through nixl-sys against real DAOS (ci/kvbm.sh; a second process onboards)"
		bash ci/kvbm.sh || { say "ERROR: ci/kvbm.sh against real DAOS failed"; crc=1; }
	fi
	say "pytest tests/e2e against real DAOS (pool $DAOS_POOL, container $DAOS_CONT)"
	pytest_pass "real DAOS" "$@" && exit "$crc"
)

# Eviction on a real engine (tests/e2e/test_real_evict.py): a small pool of its own, filled
# three times over with the plugin's defaults. A fresh engine, because filling the real pass's
# pool would starve its other tests. Same lock, same always-stop trap.
EVICT_POOL_SIZE=${NIXL_DAOS_EVICT_POOL_SIZE:-2GiB}
evict_pass() (
	exec 9>"$LOCK"
	say "real DAOS (eviction): waiting for $LOCK"
	flock 9
	trap 'say "real DAOS (eviction): stopping the engine"; bash "$REAL_DAOS" stop >/dev/null 2>&1 || true' EXIT
	trap 'exit 130' INT TERM
	export DAOS_LOCAL_TARGETS=${DAOS_LOCAL_TARGETS:-2} DAOS_LOCAL_POOL_SIZE=$EVICT_POOL_SIZE DAOS_LOCAL_SCM_GB=4
	local log=$ROOT/target/daos-local-evict.log
	say "real DAOS (eviction): starting an engine with a $EVICT_POOL_SIZE pool"
	bash "$REAL_DAOS" start >"$log" 2>&1 || { tail -30 "$log"; say "ERROR: real DAOS (eviction): the engine did not start (log: $log)"; exit 1; }
	eval "$(bash "$REAL_DAOS" env)"
	"$DAOS_LOCAL_BIN/daos" cont create "$DAOS_POOL" nixl-evict >>"$log" 2>&1 || { tail -5 "$log"; say "ERROR: real DAOS (eviction): daos cont create failed"; exit 1; }
	local bytes
	bytes=$("$VPY" -c "import sys; n, u = sys.argv[1][:-3], sys.argv[1][-3:]; print(int(float(n) * {'GiB': 1 << 30, 'MiB': 1 << 20}[u]))" "$EVICT_POOL_SIZE")
	export NIXL_DAOS_TESTBED=1 DAOS_CONT=nixl-evict NIXL_DAOS_EVICT_POOL=$DAOS_POOL NIXL_DAOS_EVICT_POOL_BYTES=$bytes
	say "pytest tests/e2e/test_real_evict.py against real DAOS (pool $DAOS_POOL of $EVICT_POOL_SIZE)"
	local rc=0
	timeout --signal=KILL 1800 "$VPY" -m pytest tests/e2e/test_real_evict.py -v -ra -s -p no:cacheprovider || rc=$?
	[ "$rc" = 0 ] && say "real DAOS (eviction): all tests passed" || say "ERROR: real DAOS (eviction): pytest failed (exit $rc)"
	exit "$rc"
)

# An engine of a redundant three-engine system dies under load (tests/e2e/test_real_failover.py):
# a fresh system with three engines of two targets, a container with rd_fac:1,rd_lvl:1 (all
# engines share one host, so redundancy is at rank level). The plugin runs with its defaults.
# The last scenario kills two engines, so the trap stops the system. Same lock.
failover_pass() (
	exec 9>"$LOCK"
	say "real DAOS (failover): waiting for $LOCK"
	flock 9
	trap 'say "real DAOS (failover): stopping the engines"; bash "$REAL_DAOS" stop >/dev/null 2>&1 || true' EXIT
	trap 'exit 130' INT TERM
	export DAOS_LOCAL_ENGINES=3 DAOS_LOCAL_TARGETS=2 DAOS_LOCAL_SCM_GB=4 DAOS_LOCAL_POOL_SIZE=4500MiB
	local log=$ROOT/target/daos-local-failover.log
	say "real DAOS (failover): starting three engines"
	bash "$REAL_DAOS" start >"$log" 2>&1 || { tail -30 "$log"; say "ERROR: real DAOS (failover): the engines did not start (log: $log)"; exit 1; }
	eval "$(bash "$REAL_DAOS" env)"
	"$DAOS_LOCAL_BIN/daos" cont create "$DAOS_POOL" nixl-failover --properties rd_fac:1,rd_lvl:1 >>"$log" 2>&1 ||
		{ tail -5 "$log"; say "ERROR: real DAOS (failover): daos cont create failed"; exit 1; }
	export NIXL_DAOS_TESTBED=1 DAOS_CONT=nixl-failover NIXL_DAOS_LOCAL=$REAL_DAOS NIXL_DAOS_FAILOVER=1
	say "pytest tests/e2e/test_real_failover.py against three real DAOS engines (pool $DAOS_POOL)"
	local rc=0
	timeout --signal=KILL 1800 "$VPY" -m pytest tests/e2e/test_real_failover.py -v -ra -s -p no:cacheprovider || rc=$?
	[ "$rc" = 0 ] && say "real DAOS (failover): all tests passed" || say "ERROR: real DAOS (failover): pytest failed (exit $rc)"
	exit "$rc"
)

real_rc=0
evict_rc=0
failover_rc=0
if [ ! -f "$REAL_DAOS" ]; then
	say "real DAOS pass skipped: no $REAL_DAOS (a real pool: ci/e2e-testbed.sh)"
elif [ "$(id -u)" != 0 ]; then
	say "real DAOS pass skipped: $REAL_DAOS needs root (a real pool: ci/e2e-testbed.sh)"
else
	real_pass "$@" || real_rc=$?
	evict_pass || evict_rc=$?
	failover_pass || failover_rc=$?
fi

long_rc=0
if [ "$LONG" = 1 ]; then
	if [ -f "$REAL_DAOS" ] && [ "$(id -u)" = 0 ]; then
		say "--long: ci/exit-loop.sh 40 (interpreter exit with fetches in flight, real engine)"
		bash ci/exit-loop.sh 40 || { say "ERROR: ci/exit-loop.sh: a run did not exit cleanly"; long_rc=1; }
	else
		say "--long: ci/exit-loop.sh SKIPPED: needs $REAL_DAOS and root"
	fi
	nixl_src=$(ls "$ROOT"/../shared/third_party/nixl-*-with-subprojects.tar.* 2>/dev/null | head -1 || true)
	if [ -n "$nixl_src" ]; then
		# NIXL's CPU-only build needs (../shared/third_party/README.md); not libabsl-dev (too old).
		command -v meson >/dev/null || apt_install meson ninja-build cmake patch libgtest-dev libgmock-dev \
			libgflags-dev liburing-dev libaio-dev pybind11-dev libasio-dev libnuma-dev libhwloc-dev
		say "--long: ci/nixl-intree.sh $nixl_src"
		bash ci/nixl-intree.sh "$nixl_src" || { say "ERROR: ci/nixl-intree.sh failed"; long_rc=1; }
	else
		say "--long: ci/nixl-intree.sh SKIPPED: no NIXL source under ../shared/third_party"
	fi
fi

[ "$sim_rc" = 0 ] || die "end-to-end tests against daos-sim failed"
[ "$cons_rc" = 0 ] || die "consumers tests against daos-sim failed"
[ "$lmc_rc" = 0 ] || die "the LMCache patch series (upstream/lmcache/check.sh) failed"
[ "$vllm_rc" = 0 ] || die "vLLM with LMCache through the plugin on daos-sim (ci/vllm-e2e.sh) failed"
[ "$kvbm_rc" = 0 ] || die "the KVBM tests through nixl-sys (ci/kvbm.sh) failed"
[ "$meson_rc" = 0 ] || die "the top-level meson build or its tests (ci/meson-standalone.sh) failed"
[ "$real_rc" = 0 ] || die "end-to-end or consumers tests against real DAOS failed"
[ "$evict_rc" = 0 ] || die "eviction tests against real DAOS failed"
[ "$failover_rc" = 0 ] || die "failover tests against three real DAOS engines failed"
[ "$long_rc" = 0 ] || die "the --long checks failed (exit loop or in-tree NIXL build)"
say "all tests passed"
