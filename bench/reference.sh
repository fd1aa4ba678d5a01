#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The reference C++ plugin as a contender (issue 18): builds the DAOS plugin of gluesys/nixl-daos
# (the C++ plugin this project re-creates) from source the caller names, as
# target/reference/libplugin_DAOSCPP.so, so that bench.kv_bench --real can load it beside ours as
# NIXL backend "DAOSCPP" (contender real-cpp). No third-party code is kept in this repository:
# the source comes from where the caller points.
#
#     bash bench/reference.sh [SRC]          prints the built library's path on its last line
#
# SRC (or NIXL_DAOS_CPP_SRC): the plugin's sources, as one of
#   - a directory holding daos_backend.cpp, daos_backend.h and daos_plugin.cpp (its
#     src/plugins/daos, or a checkout of the repository, which has them there),
#   - its upstream patch (upstream/0001-plugins-add-DAOS-storage-backend.patch), applied to an
#     empty directory,
#   - an http(s) URL of that patch (downloaded with curl).
# NIXL_SRC: NIXL's source tree or a tarball of it (default: the one in ../shared/third_party),
#   for its plugin API headers (src/api/cpp). Its logging header pulls in abseil, which the
#   NIXL wheel does not export to plugins, so bench/reference/compat stands in for it.
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

src=${1:-${NIXL_DAOS_CPP_SRC:-}}
if [ -z "$src" ]; then
	echo "SKIP: no reference plugin source (give bash bench/reference.sh SRC, or NIXL_DAOS_CPP_SRC: a directory with daos_backend.cpp, the repository, or its upstream 0001 patch)"
	exit 0
fi
mkdir -p "$out"
# Outside this repository: git apply inside a work tree applies to that tree's root.
work=$(mktemp -d "${TMPDIR:-/tmp}/nixl-daos-reference.XXXXXX")
so=$out/libplugin_DAOSCPP.so
trap 'rm -rf "$work" "$so.tmp"' EXIT

case $src in
http://* | https://*)
	name=${src##*/}
	curl -fsSL --retry 2 -o "$work/$name" "$src" || die "could not download $src (curl exit $?): download it and give its path"
	src=$work/$name
	;;
esac
[ -e "$src" ] || die "$src does not exist: give the plugin's directory, the repository or its upstream 0001 patch"
src=$(realpath "$src") # the patch is applied from another directory
if [ -f "$src" ]; then
	# The upstream patch: new files only, so it applies to an empty tree.
	# A repository of its own: git apply inside another work tree would apply to that tree's root.
	git init -q "$work/tree"
	(cd "$work/tree" && git apply --include='src/plugins/daos/*' "$src") ||
		die "$src did not apply as a patch to an empty tree: give the plugin's directory or its upstream 0001 patch"
	src=$work/tree/src/plugins/daos
elif [ -d "$src" ] && [ ! -f "$src/daos_backend.cpp" ] && [ -f "$src/src/plugins/daos/daos_backend.cpp" ]; then
	src=$src/src/plugins/daos
fi
for f in daos_backend.cpp daos_backend.h daos_plugin.cpp; do
	[ -f "$src/$f" ] || die "no $f in $src: SRC must be the plugin's directory (src/plugins/daos), the repository or its upstream patch"
done

nixl=${NIXL_SRC:-}
if [ -z "$nixl" ]; then
	nixl=$(ls "$root"/../shared/third_party/nixl-*.tar.xz 2>/dev/null | head -1 || true)
	[ -n "$nixl" ] || die "no NIXL source: set NIXL_SRC to a NIXL checkout or tarball (its src/api/cpp headers are needed)"
fi
if [ -f "$nixl" ]; then
	# Only the headers the plugin API needs (a few hundred KiB of an 8 MB tarball).
	mkdir -p "$work/nixl"
	tar -xJf "$nixl" -C "$work/nixl" --wildcards '*/src/api/cpp/*' '*/src/utils/common/*' '*/src/core/telemetry/*' ||
		die "could not unpack NIXL's headers from $nixl"
	nixl=$(ls -d "$work"/nixl/*/ | head -1)
fi
[ -f "$nixl/src/api/cpp/backend/backend_plugin.h" ] || die "no src/api/cpp/backend/backend_plugin.h under NIXL_SRC=$nixl"

prefix=${DAOS_PREFIX:-}
if [ -z "$prefix" ] && [ -n "${NIXL_DAOS_LIBDAOS:-}" ]; then
	prefix=$(dirname "$(dirname "$NIXL_DAOS_LIBDAOS")")
fi
[ -n "$prefix" ] && [ -f "$prefix/include/daos.h" ] ||
	die "no DAOS client headers: set DAOS_PREFIX to the prefix holding include/daos.h (or NIXL_DAOS_LIBDAOS to its lib64/libdaos.so.2, as daos-local.sh env does)"
lib=$prefix/lib64
[ -d "$lib" ] || lib=$prefix/lib

# C++20, as NIXL's core is built with (its plugin headers say plugins must match it).
say "building $so from $src (NIXL headers $nixl, DAOS $prefix)"
${CXX:-g++} -std=c++20 -O2 -g -fPIC -pthread -shared -o "$so.tmp" \
	-I"$here/reference/compat" -I"$nixl/src/api/cpp" -I"$nixl/src/api/cpp/backend" -I"$nixl/src/utils" \
	-I"$nixl/src/core/telemetry" -I"$prefix/include" \
	"$src/daos_backend.cpp" "$src/daos_plugin.cpp" -L"$lib" -ldaos -Wl,-rpath,"$lib" ||
	die "the reference plugin did not compile (the compiler's messages are above)"
mv "$so.tmp" "$so"
# Record what was built from, for the results.
{
	echo "source: ${1:-${NIXL_DAOS_CPP_SRC:-}}"
	echo "sha256 of its files: $(cd "$src" && sha256sum daos_backend.cpp daos_backend.h daos_plugin.cpp | sha256sum | cut -c1-16)"
	echo "built: $(date -u +%FT%TZ)"
} >"$out/built-from.txt"
echo "$so"
