#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Builds the installable wheel: dist/nixl_daos-<version>-py3-none-manylinux_2_28_x86_64.whl
# (and the plugin's split-off debug info beside it, dist/libplugin_DAOS.so.debug, not shipped).
#
#   bash ci/package.sh
#
# 1. The plugin, linked against glibc 2.28's symbol lists (ci/portable-link.sh, zig from PyPI's
#    `ziglang` in .cache/package-venv) with the shim compiled by the system's g++ against its
#    libstdc++; its own target directory (target/package), so the test build is untouched.
# 2. objdump -T of the result: nothing above GLIBC_2.28, GLIBCXX_3.4.22, CXXABI_1.3.11, GCC_7.0.0
#    (what NIXL's own wheel plugins need at most, and what EL8's libraries have), no strong
#    symbol without a version, and no library but the C and C++ runtimes; a build that needs
#    more fails here, naming the symbols. The plugin as shipped stays in target/package/wheel/.
# 3. The wheel: the package nixl_daos (the `nixl-daos` command, python/nixl_daos) with the plugin,
#    and the plugin again in each NIXL wheel's plugin directory, site-packages/.nixl_cu12.mesonpy.libs/
#    plugins and .nixl_cu13...: the one directory NIXL's plugin manager reads (beside its
#    libnixl.so) unless NIXL_PLUGIN_DIR replaces it. So `pip install nixl-daos` beside NIXL makes
#    DAOS a backend of that NIXL, with UCX, POSIX and the rest still there and no environment
#    variable. pip removes those files again with `pip uninstall nixl-daos`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
source "$ROOT/ci/lib.sh"

ZIG_VERSION=0.17.1
MAX_GLIBC=2.28 MAX_GLIBCXX=3.4.22 MAX_CXXABI=1.3.11 MAX_GCC=7.0.0
ALLOWED_NEEDED="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1"
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
PYVERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' python/nixl_daos/__init__.py)
[ "$VERSION" = "$PYVERSION" ] || die "Cargo.toml says $VERSION, python/nixl_daos/__init__.py says $PYVERSION"
[ "$(uname -m)" = x86_64 ] || die "builds the x86_64 wheel only (this machine is $(uname -m))"

# --- tools -------------------------------------------------------------------------------------
TOOLS=$ROOT/.cache/package-venv
if ! "$TOOLS/bin/python" -c "import ziglang, wheel, importlib.metadata as m; assert m.version('ziglang') == '$ZIG_VERSION'" 2>/dev/null; then
	PY=$(find_py311 || command -v python3) || die "no python3"
	rm -rf "$TOOLS"
	"$PY" -m venv "$TOOLS"
	say "pip install ziglang==$ZIG_VERSION wheel (into .cache/package-venv)"
	"$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "ziglang==$ZIG_VERSION" wheel
fi
ZIG=$("$TOOLS/bin/python" -c 'import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / "zig")')
command -v g++ >/dev/null || die "g++ is needed (the shim is compiled against libstdc++): apt-get install g++"

# --- 1. the portable build ----------------------------------------------------------------------
say "cargo build --release (glibc $MAX_GLIBC symbol lists, zig $ZIG_VERSION as the linker)"
ZIG=$ZIG CXX_x86_64_unknown_linux_gnu=g++ CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER="$ROOT/ci/portable-link.sh" \
	CARGO_TARGET_DIR="$ROOT/target/package" cargo build --release -p nixl-daos --lib --target x86_64-unknown-linux-gnu
BUILT=$ROOT/target/package/x86_64-unknown-linux-gnu/release/libplugin_DAOS.so
mkdir -p dist
rm -f dist/nixl_daos-*.whl
objcopy --only-keep-debug "$BUILT" dist/libplugin_DAOS.so.debug
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p target/package/wheel
SO=$ROOT/target/package/wheel/libplugin_DAOS.so
objcopy --strip-debug --add-gnu-debuglink=dist/libplugin_DAOS.so.debug "$BUILT" "$SO"

# --- 2. what it needs to load -------------------------------------------------------------------
# objdump prints a symbol's version in parentheses since binutils 2.35, bare before: both read.
newest() { # $1: prefix (GLIBC_); the highest version of that prefix the plugin needs
	objdump -T "$SO" | awk -v p="$1" '/\*UND\*/ {v = $(NF-1); gsub(/[()]/, "", v); if (index(v, p) == 1) print substr(v, length(p) + 1)}' |
		grep -E '^[0-9][0-9.]*$' | sort -uV | tail -1
}
above() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" != "$2" ]; } # $1 > $2
for pair in GLIBC_:$MAX_GLIBC GLIBCXX_:$MAX_GLIBCXX CXXABI_:$MAX_CXXABI GCC_:$MAX_GCC; do
	prefix=${pair%%:*} max=${pair#*:}
	got=$(newest "$prefix")
	if [ -n "$got" ] && above "$got" "$max"; then
		objdump -T "$SO" | awk '/\*UND\*/ {v = $(NF-1); gsub(/[()]/, "", v); print v, $NF}' | while read -r v sym; do
			[[ $v == "$prefix"* ]] || continue
			v=${v#"$prefix"}
			if above "$v" "$max"; then echo "  $prefix$v $sym"; fi
		done
		die "the plugin needs $prefix$got, above the $prefix$max it must load with (symbols above)"
	fi
	say "needs at most $prefix${got:-none} (limit $prefix$max)"
done
# A symbol the plugin needs without a version: glibc 2.28's lists lack it (zig links a function
# newer than them so), and the loader would refuse the plugin there. Only weak ones may be so
# (Rust's std looks them up and falls back: gettid).
unversioned=$(objdump -T "$SO" | awk '/\*UND\*/ && $2 != "w" && $(NF-1) !~ /^\(?[A-Z][A-Za-z]*_[0-9][0-9.]*\)?$/ {print $NF}')
[ -z "$unversioned" ] || die "the plugin needs symbols without a version, which glibc $MAX_GLIBC lacks: $unversioned"
for lib in $(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
	case " $ALLOWED_NEEDED " in *" $lib "*) ;; *) die "the plugin needs $lib, which the manylinux_2_28 policy does not provide" ;; esac
done

# --- 3. the wheel -------------------------------------------------------------------------------
W=$STAGE/wheel
mkdir -p "$W"
cp -r python/nixl_daos "$W/"
find "$W" -name __pycache__ -prune -exec rm -rf {} +
cp "$SO" "$W/nixl_daos/libplugin_DAOS.so"
for nixl in nixl_cu12 nixl_cu13; do
	mkdir -p "$W/.$nixl.mesonpy.libs/plugins"
	cp "$SO" "$W/.$nixl.mesonpy.libs/plugins/libplugin_DAOS.so"
done
DI=$W/nixl_daos-$VERSION.dist-info
mkdir -p "$DI"
cp LICENSE "$DI/" 2>/dev/null || true
cat >"$DI/METADATA" <<EOF
Metadata-Version: 2.1
Name: nixl-daos
Version: $VERSION
Summary: DAOS storage backend for NIXL (the DAOS object API; DRAM and VRAM to DAOS keys)
License: Apache-2.0
Requires-Python: >=3.10
Description-Content-Type: text/markdown

$(cat README.md)
EOF
cat >"$DI/WHEEL" <<EOF
Wheel-Version: 1.0
Generator: nixl-daos ci/package.sh
Root-Is-Purelib: false
Tag: py3-none-manylinux_2_28_x86_64
EOF
cat >"$DI/entry_points.txt" <<EOF
[console_scripts]
nixl-daos = nixl_daos.cli:main
EOF
"$TOOLS/bin/python" -m wheel pack "$W" -d dist >/dev/null
whl=$(ls dist/nixl_daos-"$VERSION"-py3-none-manylinux_2_28_x86_64.whl)
say "built $whl ($(du -h "$whl" | cut -f1); plugin $(du -h "$SO" | cut -f1) stripped, debug info in dist/libplugin_DAOS.so.debug)"
