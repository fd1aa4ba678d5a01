#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Makes an LMCache "overlay" for PYTHONPATH: a copy of the LMCache package installed in a venv,
# with the Python files of LMCache's released source patched by every patch here on top (the
# installed package has the compiled extensions the source lacks; its Python files are the
# source's). Used by tests/vllm, whose vLLM needs the CPU connector of this series.
#
#   bash upstream/lmcache/overlay.sh PYTHON OUT_DIR    # then PYTHONPATH=OUT_DIR
#
# Idempotent: OUT_DIR is rebuilt only when the patches or the installed LMCache changed
# (a stamp file inside it records both).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CPY=${1:?usage: overlay.sh PYTHON OUT_DIR}
OUT=${2:?usage: overlay.sh PYTHON OUT_DIR}
source "$HERE/sdist.sh"

die() { printf '== lmcache/overlay.sh: ERROR: %s\n' "$*" >&2; exit 1; }

site=$("$CPY" -c 'import importlib.metadata as m, lmcache, os, sys
assert m.version("lmcache") == sys.argv[1], m.version("lmcache")
print(os.path.dirname(os.path.dirname(lmcache.__file__)))' "$VERSION") ||
	die "$CPY has no lmcache $VERSION"
stamp=$( (cat "$HERE"/*.patch; echo "$site"; stat -c %Y "$site/lmcache/__init__.py") | sha256sum | cut -c1-16)
if [ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$stamp" ]; then
	echo "$OUT"
	exit 0
fi

fetch_sdist
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/src"
tar xzf "$CACHE/$SDIST" -C "$WORK/src" --strip-components=1
for p in "$HERE"/*.patch; do
	patch -d "$WORK/src" -p1 --quiet --forward --batch <"$p" >/dev/null || die "${p##*/} does not apply to lmcache $VERSION"
done
rm -rf "$OUT.tmp"
overlay_into "$site" "$WORK/src" "$OUT.tmp"
echo "$stamp" >"$OUT.tmp/.stamp"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
