#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
#
# Dynamo KVBM's object tier through NIXL's own Rust bindings (issue 17):
#   bash ci/kvbm.sh [NIXL_SOURCE]     (default: ../shared/third_party/nixl-*-with-subprojects.tar.*)
# 1. builds NIXL from NIXL_SOURCE (a tarball or a source directory; CPU only: release build, no
#    tests, no examples, only the POSIX plugin) and installs it into a per-machine cache keyed by
#    the source's sha256: ${XDG_CACHE_HOME:-$HOME/.cache}/nixl-daos/nixl-<sha12>/prefix, reused by
#    every later run (the cold build takes about 10 minutes on 2 cores; see upstream/consumers.md);
# 2. builds tests/kvbm (its own Cargo workspace, not the repository's) against that prefix with
#    nixl-sys from crates.io, NIXL_NO_STUBS_FALLBACK=1 so that nixl-sys's stub fallback can never
#    stand in for NIXL, into a target dir under the same cache;
# 3. runs its tests: the plugin target/release/libplugin_DAOS.so installed as OBJ, on daos-sim
#    (target/release/libdaos_sim.so), or with NIXL_DAOS_TESTBED=1 on the real pool DAOS_POOL through
#    NIXL_DAOS_LIBDAOS (ci/test.sh's real pass), where a second process also onboards what the
#    first offloaded. Both libraries come from `cargo build --release` at the root, which this
#    script does not run.
# A prerequisite that cannot be had (no NIXL source, no cargo, meson/ninja missing and no root to
# apt-get them, no libclang for bindgen, no crates.io, the plugin not built) prints ONE line
# starting with "SKIP:" and exits 0. A build or test failure exits non-zero.
# Environment: JOBS (default 2), NIXL_DAOS_KVBM_CACHE (default the cache dir above),
# NIXL_DAOS_KVBM_PREFIX (use this installed NIXL instead of building one).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/ci/lib.sh"

JOBS=${JOBS:-2}
skip() {
	printf 'SKIP: %s\n' "$*"
	exit 0
}

SRC=${1:-}
if [ -z "$SRC" ]; then
	SRC=$(ls "$ROOT"/../shared/third_party/nixl-*-with-subprojects.tar.* 2>/dev/null | head -1 || true)
	[ -n "$SRC" ] || skip "kvbm: no NIXL source (none given and no ../shared/third_party/nixl-*-with-subprojects.tar.*)"
fi
[ -e "$SRC" ] || skip "kvbm: NIXL source $SRC does not exist"
SRC=$(cd "$(dirname "$SRC")" && pwd)/$(basename "$SRC")

PLUGIN="$ROOT/target/release/libplugin_DAOS.so"
SIM="$ROOT/target/release/libdaos_sim.so"
[ -f "$PLUGIN" ] && [ -f "$SIM" ] || skip "kvbm: $PLUGIN or $SIM missing (run cargo build --release first)"
command -v cargo >/dev/null || skip "kvbm: no cargo on PATH"

# The key of the install: the tarball's sha256, or for a directory its file list's (names, sizes,
# mtimes).
if [ -f "$SRC" ]; then
	SHA=$(sha256sum "$SRC" | cut -c1-12)
else
	[ -f "$SRC/meson.build" ] || skip "kvbm: $SRC is neither a tarball nor a NIXL source directory"
	SHA=$(cd "$SRC" && find . -path ./build -prune -o -path ./.git -prune -o -type f -printf '%P %s %T@\n' | sort | sha256sum | cut -c1-12)
fi
CACHE=${NIXL_DAOS_KVBM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nixl-daos/nixl-$SHA}
PREFIX=${NIXL_DAOS_KVBM_PREFIX:-$CACHE/prefix}
mkdir -p "$CACHE"

# One build per cache at a time (two CI jobs on one machine).
exec 9>"$CACHE/.lock"
flock 9

if [ -n "${NIXL_DAOS_KVBM_PREFIX:-}" ]; then
	[ -f "$PREFIX/include/nixl.h" ] || skip "kvbm: NIXL_DAOS_KVBM_PREFIX=$PREFIX has no include/nixl.h"
	say "using the installed NIXL in $PREFIX"
elif [ -f "$PREFIX/.complete" ]; then
	say "NIXL from $(basename "$SRC") already installed in $PREFIX ($(cat "$PREFIX/.complete"))"
else
	# NIXL's CPU-only build needs (../shared/third_party/README.md); not libabsl-dev (too old).
	if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
		command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] ||
			skip "kvbm: meson/ninja missing and no root apt-get to install NIXL's build deps"
		apt_install meson ninja-build cmake patch pkg-config libgtest-dev libgmock-dev \
			libgflags-dev liburing-dev libaio-dev pybind11-dev libasio-dev libnuma-dev libhwloc-dev
	fi
	free_gb=$(df -Pk "$CACHE" | awk 'NR == 2 { printf "%d", $4 / 1048576 }')
	[ "$free_gb" -ge 4 ] || skip "kvbm: only ${free_gb} GB free under $CACHE; building NIXL needs about 4 GB"
	WORK="$CACHE/work"
	rm -rf "$WORK" "$PREFIX"
	mkdir -p "$WORK"
	say "build NIXL from $SRC into $PREFIX (cold: about 10 minutes on 2 cores)"
	t0=$(date +%s)
	if [ -f "$SRC" ]; then
		mkdir -p "$WORK/unpack"
		tar -xf "$SRC" -C "$WORK/unpack"
		tops=("$WORK"/unpack/*)
		[ ${#tops[@]} -eq 1 ] && [ -d "${tops[0]}" ] || die "$SRC: expected one top-level directory"
		mv "${tops[0]}" "$WORK/nixl"
	else
		mkdir -p "$WORK/nixl"
		(cd "$SRC" && tar --exclude=./build --exclude=./.git -cf - .) | tar -xf - -C "$WORK/nixl"
	fi
	# Release (NIXL's INFO log level, optimized: the throughput printed by the tests is not NIXL
	# at -O0), no tests (not built in release anyway), no examples, only POSIX of the plugins (the
	# tests load ours from NIXL_PLUGIN_DIR). The Python bindings have no option and are built.
	(cd "$WORK/nixl" && nice -n 10 meson setup "$WORK/build" --prefix="$PREFIX" --libdir=lib/x86_64-linux-gnu \
		--wrap-mode=nodownload --force-fallback-for=tomlplusplus -Dbuildtype=release -Dwerror=false \
		-Dbuild_tests=false -Dbuild_examples=false -Denable_plugins=POSIX \
		>"$CACHE/meson-setup.log" 2>&1) || {
		tail -30 "$CACHE/meson-setup.log"
		die "meson setup failed (log: $CACHE/meson-setup.log)"
	}
	nice -n 10 ninja -C "$WORK/build" -j"$JOBS" >"$CACHE/ninja.log" 2>&1 || {
		tail -40 "$CACHE/ninja.log"
		die "NIXL build failed (log: $CACHE/ninja.log)"
	}
	meson install -C "$WORK/build" --no-rebuild >"$CACHE/install.log" 2>&1 || {
		tail -20 "$CACHE/install.log"
		die "meson install failed (log: $CACHE/install.log)"
	}
	[ -f "$PREFIX/include/nixl.h" ] && ls "$PREFIX"/lib/*/libnixl.so >/dev/null || die "the install in $PREFIX has no nixl.h or libnixl.so"
	rm -rf "$WORK"
	t1=$(date +%s)
	echo "built from $(basename "$SRC") in $((t1 - t0)) s on $(nproc) cores, $(date -u +%FT%TZ)" >"$PREFIX/.complete"
	say "NIXL installed in $PREFIX: $(cat "$PREFIX/.complete")"
fi
LIBDIR=$(dirname "$(ls "$PREFIX"/lib/*/libnixl.so "$PREFIX"/lib64/libnixl.so "$PREFIX"/lib/libnixl.so 2>/dev/null | head -1)")

kvbm_env kvbm

say "build tests/kvbm against $PREFIX (nixl-sys, NIXL_NO_STUBS_FALLBACK=1)"
t0=$(date +%s)
nice -n 10 cargo test --manifest-path "$MANIFEST" --release -j"$JOBS" --no-run
t1=$(date +%s)
say "tests/kvbm built in $((t1 - t0)) s"

# On a real pool every test's bucket is a container of its own (about 0.7 GiB in all): destroyed
# afterwards, pass or fail, so that the pool the later tests share is not left fuller (the
# plugin's eviction then evicts their fresh keys: a cross-process test read a miss that way).
drop_buckets() {
	local daos=${DAOS_LOCAL_BIN:+$DAOS_LOCAL_BIN/}daos c
	command -v "$daos" >/dev/null || { say "no daos tool: the tests' kvbm-* containers stay in $DAOS_POOL"; return 0; }
	for c in $("$daos" cont list "$DAOS_POOL" 2>/dev/null | awk '$2 ~ /^kvbm-/ { print $2 }'); do
		"$daos" cont destroy --force "$DAOS_POOL" "$c" >/dev/null 2>&1 || say "could not destroy container $c"
	done
}
if [ -n "${NIXL_DAOS_TESTBED:-}" ]; then
	say "run tests/kvbm (plugin installed as OBJ, real pool $DAOS_POOL)"
	trap drop_buckets EXIT
else
	say "run tests/kvbm (plugin installed as OBJ, daos-sim)"
fi
# One test at a time: each owns the process's NIXL agent and prints its throughput.
cargo test --manifest-path "$MANIFEST" --release -j"$JOBS" -- --test-threads=1 --nocapture
t2=$(date +%s)
say "tests/kvbm passed in $((t2 - t1)) s"

# The same workload through the Python harness (the project venv's NIXL wheel), for the
# throughput side by side; the THROUGHPUT lines above are the Rust path's.
if [ -n "${NIXL_DAOS_TESTBED:-}" ]; then
	# 1 GiB of fresh keys into the real pass's shared container would only feed its eviction.
	say "real pool: the Python side of the throughput comparison runs on daos-sim only"
elif [ -x "$ROOT/.venv/bin/python" ] && "$ROOT/.venv/bin/python" -c 'import nixl_cu12' 2>/dev/null; then
	say "the same workload through Python (nixl-cu12 wheel, tests/kvbm/py_same_workload.py)"
	"$ROOT/.venv/bin/python" "$ROOT/tests/kvbm/py_same_workload.py" 2>&1 | grep -v ' INFO \| WARN '
else
	say "no .venv with nixl_cu12 (bash ci/setup.sh makes it): the Python side of the throughput comparison not run"
fi
