#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
#
# Checks that the KVBM patch beside this script applies to a Dynamo source tree:
#   bash upstream/kvbm/check.sh <dynamo-tree> [--build]
# Dry run only: the tree is not modified. With --build, also copies lib/ and the workspace files
# to a temporary directory, applies the patch there and runs `cargo check -p kvbm-engine` (heavy:
# Dynamo's whole dependency tree; not run by CI). Exit status: 0 applies (and builds), 1 not.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PATCH=$(ls "$HERE"/*.patch | head -1)
TREE=${1:?usage: check.sh <dynamo-tree> [--build]}
BUILD=${2:-}
for f in lib/kvbm-engine/src/object/nixl.rs lib/memory/src/nixl.rs; do
	[ -f "$TREE/$f" ] || { echo "check.sh: $TREE has no $f (not a Dynamo tree, or one before the NIXL object client)"; exit 1; }
done
echo "check.sh: $(basename "$PATCH") against $TREE"
if grep -q 'RegDescList' "$TREE/lib/memory/src/nixl.rs"; then
	echo "check.sh: note: $TREE's dynamo-memory already names RegDescList; drop the patch's lib/memory hunk there"
fi
if ! out=$(patch -p1 --dry-run --forward -d "$TREE" <"$PATCH" 2>&1); then
	echo "$out"
	echo "check.sh: the patch does NOT apply"
	exit 1
fi
echo "$out"
grep -qi "fuzz\|offset" <<<"$out" && echo "check.sh: applies, with offsets or fuzz (the tree moved since 575a8c80)" || echo "check.sh: applies cleanly"
if [ "$BUILD" = --build ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	(cd "$TREE" && tar --exclude=./target --exclude=./.git -cf - .) | tar -xf - -C "$work"
	patch -p1 --quiet --forward -d "$work" <"$PATCH"
	(cd "$work" && cargo check -p kvbm-engine) || { echo "check.sh: kvbm-engine does not build patched"; exit 1; }
	echo "check.sh: kvbm-engine builds patched"
fi
