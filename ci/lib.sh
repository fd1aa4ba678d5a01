#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Helpers shared by the ci/ scripts (sourced, not run).

say() { printf '== %s: %s\n' "${0##*/}" "$*"; }
die() { printf '== %s: ERROR: %s\n' "${0##*/}" "$*" >&2; exit 1; }

apt_updated=0
apt_install() {
	command -v apt-get >/dev/null || die "missing packages ($*) and no apt-get to install them"
	[ "$(id -u)" = 0 ] || die "missing packages ($*); install them as root: apt-get install -y $*"
	if [ "$apt_updated" = 0 ]; then
		apt-get update -qq
		apt_updated=1
	fi
	say "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# libclang as bindgen (clang-sys) loads it: libclang.so or libclang-<ver>.so, in LIBCLANG_PATH,
# LLVM's lib dirs or the linker cache. libclang-cpp.so (which Debian ships without libclang) is
# a different library and does not count.
have_libclang() {
	local f
	for f in ${LIBCLANG_PATH:+"$LIBCLANG_PATH"/libclang.so*} ${LIBCLANG_PATH:+"$LIBCLANG_PATH"/libclang-[0-9]*.so*} \
		/usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* \
		/usr/lib/x86_64-linux-gnu/libclang.so* /usr/lib/x86_64-linux-gnu/libclang-[0-9]*.so* \
		/usr/lib64/libclang.so* /usr/local/lib/libclang.so*; do
		[ -e "$f" ] && return 0
	done
	ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so'
}
ensure_libclang() { have_libclang || apt_install libclang-dev; }

# The environment tests/kvbm builds and runs in (ci/kvbm.sh, ci/meson-standalone.sh): nixl-sys
# against the NIXL in $PREFIX (libraries in $LIBDIR), stubs forbidden, the plugin $PLUGIN and
# daos-sim $SIM, cargo's target dir under $CACHE; sets MANIFEST. Calls the caller's skip() when
# libclang (for nixl-sys's bindgen) or the crates cannot be had. $1: the caller's name.
kvbm_env() {
	if ! have_libclang; then
		command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] || skip "$1: no libclang for nixl-sys's bindgen (apt-get install libclang-dev)"
		apt_install libclang-dev
	fi
	export NIXL_PREFIX="$PREFIX"
	export NIXL_NO_STUBS_FALLBACK=1 # nixl-sys must build against this NIXL or fail: its stubs never pass
	export CARGO_TARGET_DIR="$CACHE/cargo-target"
	export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export NIXL_DAOS_PLUGIN_SO="$PLUGIN" NIXL_DAOS_SIM_SO="$SIM"
	MANIFEST="$ROOT/tests/kvbm/Cargo.toml"
	cargo fetch --manifest-path "$MANIFEST" >/dev/null 2>"$CACHE/fetch.log" ||
		skip "$1: cargo fetch for tests/kvbm failed (no crates.io?): $(tail -1 "$CACHE/fetch.log")"
}

# A venv the ci/ scripts keep outside the clone (ci/consumers.sh, ci/vllm.sh): the nixl wheels
# are cp311, so the venv's Python must be 3.11.
is_py311() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; }

# The first Python 3.11 of $PYTHON, python3.11, python3 (its path on stdout); nothing when none.
find_py311() {
	local c
	for c in "${PYTHON:-}" python3.11 python3; do
		[ -n "$c" ] && command -v "$c" >/dev/null && is_py311 "$c" && { command -v "$c"; return 0; }
	done
	return 1
}

# Whole GB free where the path $1 would go (on its nearest existing parent's filesystem).
free_gb_for() {
	local parent=$1
	while [ ! -d "$parent" ]; do parent=$(dirname "$parent"); done
	df -Pk "$parent" | awk 'NR == 2 { printf "%d", $4 / 1048576 }'
}
