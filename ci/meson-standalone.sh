#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
#
# The top-level meson build (meson.build) against an installed NIXL, proven with NIXL's Rust
# bindings (issue 17):
#   bash ci/meson-standalone.sh [PREFIX]
# PREFIX: the installed NIXL; default $NIXL_DAOS_KVBM_PREFIX, else the one ci/kvbm.sh installs from
# ../shared/third_party/nixl-*-with-subprojects.tar.* (~/.cache/nixl-daos/nixl-<sha12>/prefix).
# 1. abseil's headers for NIXL's common/nixl_log.h: $NIXL_DAOS_ABSL_INCLUDE, else the prefix's own
#    include/absl, else the abseil-cpp subproject of the NIXL source ($NIXL_SOURCE, a tarball or a
#    directory; default the tarball above), extracted once (headers only, 4.5 MB) into the cache;
# 2. meson setup + ninja in target/meson-standalone/build (libplugin_DAOS.so, libdaos_sim.so);
# 3. checks the .so with nm/readelf (nixl_plugin_init exported, no Rust symbols exported,
#    libnixl_common.so needed) and reports the symbol src/nixl_version.rs probes in libnixl.so;
# 4. runs tests/kvbm (nixl-sys, NIXL_NO_STUBS_FALLBACK=1) with the meson-built plugin as OBJ on
#    daos-sim, in the cargo target dir ci/kvbm.sh uses for that NIXL (under the cache's lock).
# A missing prerequisite prints ONE line starting with "SKIP:" and exits 0; a build, check or test
# failure exits non-zero. Environment: JOBS (default 2), NIXL_DAOS_KVBM_CACHE, NIXL_SOURCE,
# NIXL_DAOS_ABSL_INCLUDE.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/ci/lib.sh"

JOBS=${JOBS:-2}
skip() {
	printf 'SKIP: %s\n' "$*"
	exit 0
}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/nixl-daos

# The NIXL source: for the default prefix's key, and for abseil's headers.
SRC=${NIXL_SOURCE:-$(ls "$ROOT"/../shared/third_party/nixl-*-with-subprojects.tar.* 2>/dev/null | head -1 || true)}
SHA=
if [ -n "$SRC" ] && [ -f "$SRC" ]; then
	SHA=$(sha256sum "$SRC" | cut -c1-12)
fi

PREFIX=${1:-${NIXL_DAOS_KVBM_PREFIX:-}}
if [ -z "$PREFIX" ]; then
	[ -n "$SHA" ] || skip "meson-standalone: no PREFIX given, no NIXL_DAOS_KVBM_PREFIX and no NIXL tarball to find ci/kvbm.sh's install by"
	PREFIX=$CACHE_ROOT/nixl-$SHA/prefix
	[ -f "$PREFIX/.complete" ] || skip "meson-standalone: no installed NIXL in $PREFIX (bash ci/kvbm.sh installs it)"
fi
[ -f "$PREFIX/include/nixl.h" ] || skip "meson-standalone: $PREFIX has no include/nixl.h (not an installed NIXL)"
PREFIX=$(cd "$PREFIX" && pwd)
LIBNIXL=$(ls "$PREFIX"/lib/*-linux-gnu/libnixl.so "$PREFIX"/lib64/libnixl.so "$PREFIX"/lib/libnixl.so 2>/dev/null | head -1 || true)
[ -n "$LIBNIXL" ] || skip "meson-standalone: no libnixl.so under $PREFIX/lib*"
LIBDIR=$(dirname "$LIBNIXL")
for tool in meson ninja cargo nm readelf; do
	command -v "$tool" >/dev/null || skip "meson-standalone: no $tool on PATH"
done

# ci/kvbm.sh's cache for this NIXL (its nixl-sys build is reused), else one keyed by the prefix.
if [ -n "${NIXL_DAOS_KVBM_CACHE:-}" ]; then
	CACHE=$NIXL_DAOS_KVBM_CACHE
elif [ -f "$PREFIX/.complete" ] && [ "$(basename "$PREFIX")" = prefix ]; then
	CACHE=$(dirname "$PREFIX")
else
	CACHE=$CACHE_ROOT/prefix-$(printf '%s' "$PREFIX" | sha256sum | cut -c1-12)
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock" # ci/kvbm.sh's lock: not while it (re)installs this NIXL or runs its tests
flock 9

# 1. abseil's headers: those of the abseil NIXL was built with (meson setup checks that they link
# against libnixl_common.so, which carries that abseil).
if [ -n "${NIXL_DAOS_ABSL_INCLUDE:-}" ]; then
	ABSL=$NIXL_DAOS_ABSL_INCLUDE
elif [ -f "$PREFIX/include/absl/log/log.h" ]; then
	ABSL=
elif [ -n "$SRC" ] && [ -d "$SRC" ]; then
	ABSL=$(ls -d "$SRC"/subprojects/abseil-cpp-*/ 2>/dev/null | head -1 || true)
	[ -n "$ABSL" ] || skip "meson-standalone: no subprojects/abseil-cpp-* in $SRC (abseil's headers for NIXL's nixl_log.h)"
else
	[ -n "$SRC" ] && [ -f "$SRC" ] || skip "meson-standalone: no abseil headers for NIXL's nixl_log.h (no NIXL source to take them from; set NIXL_DAOS_ABSL_INCLUDE)"
	ABSL_DIR=$CACHE/abseil-$SHA
	if [ ! -d "$ABSL_DIR" ]; then
		rm -rf "$ABSL_DIR.tmp"
		mkdir -p "$ABSL_DIR.tmp"
		tar -xf "$SRC" -C "$ABSL_DIR.tmp" --strip-components=2 --wildcards \
			'*/subprojects/abseil-cpp-*/absl/*.h' '*/subprojects/abseil-cpp-*/absl/*.inc' \
			'*/subprojects/abseil-cpp-*/LICENSE' 2>/dev/null || true
		ls -d "$ABSL_DIR.tmp"/abseil-cpp-*/absl/log >/dev/null 2>&1 ||
			skip "meson-standalone: $SRC has no subprojects/abseil-cpp-* (abseil's headers for NIXL's nixl_log.h)"
		mv "$ABSL_DIR.tmp" "$ABSL_DIR"
	fi
	ABSL=$(ls -d "$ABSL_DIR"/abseil-cpp-*/ | head -1)
fi
ABSL=${ABSL%/}
say "NIXL $PREFIX; abseil headers: ${ABSL:-with NIXL}"

# 2. configure and build.
BUILD=$ROOT/target/meson-standalone/build
opts=(-Dnixl_prefix="$PREFIX" -Dnixl_libdir="$LIBDIR" -Dabsl_include="$ABSL" -Ddaos_sim=true)
mkdir -p "$(dirname "$BUILD")"
t0=$(date +%s)
if [ -f "$BUILD/meson-private/coredata.dat" ]; then
	nice -n 19 meson setup --reconfigure "$BUILD" "$ROOT" "${opts[@]}" >"$BUILD.setup.log" 2>&1 || {
		tail -20 "$BUILD.setup.log"
		die "meson setup --reconfigure failed (log: $BUILD.setup.log)"
	}
else
	nice -n 19 meson setup "$BUILD" "$ROOT" "${opts[@]}" >"$BUILD.setup.log" 2>&1 || {
		tail -20 "$BUILD.setup.log"
		die "meson setup failed (log: $BUILD.setup.log)"
	}
fi
CARGO_BUILD_JOBS=$JOBS nice -n 19 ninja -C "$BUILD" -j"$JOBS" >"$BUILD.ninja.log" 2>&1 || {
	tail -40 "$BUILD.ninja.log"
	die "meson build failed (log: $BUILD.ninja.log)"
}
t1=$(date +%s)
PLUGIN=$BUILD/libplugin_DAOS.so SIM=$BUILD/libdaos_sim.so
say "meson build: $PLUGIN in $((t1 - t0)) s"

# 3. what NIXL needs of the .so.
exports=$(nm -D --defined-only "$PLUGIN")
grep -q ' T nixl_plugin_init$' <<<"$exports" || die "$PLUGIN does not export nixl_plugin_init"
grep -q ' T nixl_plugin_fini$' <<<"$exports" || die "$PLUGIN does not export nixl_plugin_fini"
rust=$(grep -c ' _ZN3std\| _ZN4core\| rust_\| nd_' <<<"$exports" || true)
[ "$rust" = 0 ] || die "$PLUGIN exports $rust Rust-side symbols (-Wl,--exclude-libs did not apply)"
readelf -d "$PLUGIN" | grep -q 'NEEDED.*\[libnixl_common\.so\]' || die "$PLUGIN does not need libnixl_common.so"
say "exports nixl_plugin_init/_fini, no Rust symbols; needs libnixl_common.so (NIXL's logging, abseil)"
# src/nixl_version.rs: the cargo-built plugin refuses a libnixl.so without this symbol (the meson
# one is built with NIXL_DAOS_SHIM=external and does not probe). It is an inline virtual of
# backend_engine.h, so a libnixl.so exports it only where its compiler emitted it.
# It also accepts the agent's releaseMemView, an ordinary exported function.
probe='_ZNK\(17nixlBackendEngine\|9nixlAgent\)14releaseMemViewEPv'
if line=$(nm -D --defined-only "$LIBNIXL" | grep " $probe\$" | head -1); then
	say "version probe: $LIBNIXL exports $(awk '{print $3, "(" $2 ")"}' <<<"$line"): the cargo-built plugin loads there too"
else
	say "WARNING: $LIBNIXL exports no releaseMemView: the cargo-built plugin (src/nixl_version.rs) would refuse this NIXL; the meson-built one does not probe"
fi

# 4. tests/kvbm against the meson-built plugin.
kvbm_env meson-standalone
nice -n 19 cargo test --manifest-path "$MANIFEST" --release -j"$JOBS" --no-run
t2=$(date +%s)
say "tests/kvbm built in $((t2 - t1)) s; run with the meson-built plugin as OBJ on daos-sim"
cargo test --manifest-path "$MANIFEST" --release -j"$JOBS" -- --test-threads=1 --nocapture
t3=$(date +%s)
say "tests/kvbm passed with the meson-built plugin in $((t3 - t2)) s"
