#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The other DAOS plugins for NIXL as contenders (issue 18), built from source the caller names,
# so that bench.kv_bench --real can load them beside ours under names of their own:
#   cpp  the C++ plugin of gluesys/nixl-daos (the plugin this project re-creates; object API),
#        -> target/reference/libplugin_DAOSCPP.so, backend DAOSCPP, contender real-cpp;
#   dfs  the libdfs backend of NIXL PR #2261 (files of a POSIX container through libdfs),
#        -> target/reference/libplugin_DAOSDFS.so, backend DAOSDFS, contender real-dfs.
# No third-party code is kept in this repository: the source comes from where the caller points.
#
#     bash bench/reference.sh [cpp|dfs] [SRC]     prints the built library's path on its last line
#
# SRC (or NIXL_DAOS_CPP_SRC / NIXL_DAOS_DFS_SRC): the plugin's sources, as one of
#   - its plugin directory (src/plugins/daos of that repository or branch), or a checkout that
#     has it there,
#   - a patch that adds it (cpp: upstream/0001-plugins-add-DAOS-storage-backend.patch; dfs: the
#     PR's patch), of which only src/plugins/daos is applied, to an empty directory,
#   - an http(s) URL of such a patch (downloaded with curl).
# NIXL_SRC: NIXL's source tree or a tarball of it (default: the one in ../shared/third_party),
#   for its plugin API headers (src/api/cpp, src/utils/common) and, for dfs, abseil's headers
#   (its subprojects). NIXL's logging header routes to abseil's logging library, which the NIXL
#   wheel does not export to plugins, so bench/reference/compat stands in for it.
# DAOS_PREFIX: the DAOS client's prefix (include/daos.h, lib64/libdaos.so); default: the one
#   NIXL_DAOS_LIBDAOS lies in, as `daos-local.sh env` sets it.
# Without SRC it prints SKIP and exits 0 (the benchmark then runs without this contender); a
# source that does not build exits 1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$root/target/reference"
say() { printf '== reference.sh: %s\n' "$*" >&2; }
die() {
	printf '== reference.sh: ERROR: %s\n' "$*" >&2
	exit 1
}

kind=cpp
case ${1:-} in cpp | dfs) kind=$1 && shift ;; esac
case $kind in
cpp)
	src=${1:-${NIXL_DAOS_CPP_SRC:-}} backend=DAOSCPP
	files="daos_backend.cpp daos_backend.h daos_plugin.cpp" libs="-ldaos -lgurt"
	;;
dfs)
	src=${1:-${NIXL_DAOS_DFS_SRC:-}} backend=DAOSDFS
	files="daos_backend.cpp daos_backend.h daos_client.cpp daos_client.h daos_plugin.cpp" libs="-ldfs -ldaos -lgurt"
	;;
esac
given=$src
if [ -z "$src" ]; then
	echo "SKIP: no $kind plugin source (give bash bench/reference.sh $kind SRC, or NIXL_DAOS_${kind^^}_SRC: its plugin directory, a checkout, or a patch that adds it)"
	exit 0
fi
mkdir -p "$out"
# Outside this repository: git apply inside a work tree applies to that tree's root.
work=$(mktemp -d "${TMPDIR:-/tmp}/nixl-daos-reference.XXXXXX")
so=$out/libplugin_$backend.so
trap 'rm -rf "$work" "$so.tmp"' EXIT

case $src in
http://* | https://*)
	name=${src##*/}
	curl -fsSL --retry 2 -o "$work/$name" "$src" || die "could not download $src (curl exit $?): download it and give its path"
	src=$work/$name
	;;
esac
[ -e "$src" ] || die "$src does not exist: give the plugin's directory, a checkout or a patch that adds it"
src=$(realpath "$src") # the patch is applied from another directory
if [ -f "$src" ]; then
	# The upstream patch: new files only, so it applies to an empty tree.
	# A repository of its own: git apply inside another work tree would apply to that tree's root.
	git init -q "$work/tree"
	(cd "$work/tree" && git apply --include='src/plugins/daos/*' "$src") ||
		die "$src did not apply as a patch to an empty tree: give the plugin's directory or a patch that adds it"
	src=$work/tree/src/plugins/daos
elif [ -d "$src" ] && [ ! -f "$src/daos_backend.cpp" ] && [ -f "$src/src/plugins/daos/daos_backend.cpp" ]; then
	src=$src/src/plugins/daos
fi
for f in $files; do
	[ -f "$src/$f" ] || die "no $f in $src: SRC must be the $kind plugin's directory (src/plugins/daos), a checkout or a patch that adds it"
done

nixl=${NIXL_SRC:-}
if [ -z "$nixl" ]; then
	nixl=$(ls "$root"/../shared/third_party/nixl-*.tar.xz 2>/dev/null | head -1 || true)
	[ -n "$nixl" ] || die "no NIXL source: set NIXL_SRC to a NIXL checkout or tarball (its src/api/cpp headers are needed)"
fi
if [ -f "$nixl" ]; then
	# Only the headers the plugin API needs (a few hundred KiB of an 8 MB tarball).
	mkdir -p "$work/nixl"
	pats=('*/src/api/cpp/*' '*/src/utils/common/*' '*/src/core/telemetry/*')
	[ $kind = cpp ] || pats+=('*/subprojects/abseil-cpp-*/absl/*')
	tar -xJf "$nixl" -C "$work/nixl" --wildcards "${pats[@]}" || die "could not unpack NIXL's headers from $nixl"
	nixl=$(ls -d "$work"/nixl/*/ | head -1)
	nixl=${nixl%/}
fi
[ -f "$nixl/src/api/cpp/backend/backend_plugin.h" ] || die "no src/api/cpp/backend/backend_plugin.h under NIXL_SRC=$nixl"
absl=""
if [ $kind = dfs ]; then
	# NIXL's parameter helpers (common/backend.h) join strings with abseil's header-only StrJoin.
	absl=$(ls -d "$nixl"/subprojects/abseil-cpp-*/ 2>/dev/null | head -1)
	[ -n "$absl" ] || die "no subprojects/abseil-cpp-* under NIXL_SRC=$nixl (the dfs plugin needs abseil's headers: give NIXL's tarball with its subprojects)"
fi

prefix=${DAOS_PREFIX:-}
if [ -z "$prefix" ] && [ -n "${NIXL_DAOS_LIBDAOS:-}" ]; then
	prefix=$(dirname "$(dirname "$NIXL_DAOS_LIBDAOS")")
fi
[ -n "$prefix" ] && [ -f "$prefix/include/daos.h" ] ||
	die "no DAOS client headers: set DAOS_PREFIX to the prefix holding include/daos.h (or NIXL_DAOS_LIBDAOS to its lib64/libdaos.so.2, as daos-local.sh env does)"
lib=$prefix/lib64
[ -d "$lib" ] || lib=$prefix/lib

# C++20, as NIXL's core is built with (its plugin headers say plugins must match it). Hidden
# symbols and -Bsymbolic: both plugins name their engine class nixlDaosEngine (with default
# visibility), and built without them, loaded into one process (the C++ plugin first), the
# libdfs backend's registerMem failed on every key; with them only nixl_plugin_init/fini are
# exported (NIXL_PLUGIN_EXPORT) and each binds to its own code. Ours hides its C++ too (build.rs).
say "building $so from $src (NIXL headers $nixl, DAOS $prefix)"
# shellcheck disable=SC2046,SC2086 # the .cpp list and the libraries are word lists
${CXX:-g++} -std=c++20 -O2 -g -fPIC -pthread -fvisibility=hidden -fvisibility-inlines-hidden -shared -Wl,-Bsymbolic -o "$so.tmp" \
	-I"$here/reference/compat" -I"$nixl/src/api/cpp" -I"$nixl/src/api/cpp/backend" -I"$nixl/src/utils" \
	-I"$nixl/src/utils/common" -I"$nixl/src/core/telemetry" ${absl:+-I"$absl"} -I"$prefix/include" \
	$(for f in $files; do case $f in *.cpp) echo "$src/$f" ;; esac; done) -L"$lib" $libs -Wl,-rpath,"$lib" -Wl,--no-undefined ||
	die "the $kind plugin did not build (the compiler's or linker's messages are above)"
mv "$so.tmp" "$so"
# Record what was built from, for the results.
{
	echo "source: $given"
	# shellcheck disable=SC2086
	echo "sha256 of its files: $(cd "$src" && sha256sum $files | sha256sum | cut -c1-16)"
	echo "built: $(date -u +%FT%TZ)"
} >"$out/built-from-$kind.txt"
echo "$so"
