#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Sourced by check.sh and overlay.sh (which define die): LMCache's released source, pinned, and
# the overlay both scripts make of it. Expects ROOT (the repository).
VERSION=0.5.6
SDIST=lmcache-$VERSION.tar.gz
SHA256=d6951e60ce8818a76aa42d0866a4ba85f1c95cd919355fff30ff24dcc3243f1e
URL=https://files.pythonhosted.org/packages/84/25/3ccd46844c94e08897aa8d72716a538c07e4583410d84dbc6cd12cb60dc1/$SDIST
CACHE="$ROOT/.cache/upstream"

# The sdist in $CACHE, downloaded and sha256-checked once.
fetch_sdist() {
	mkdir -p "$CACHE"
	echo "$SHA256  $CACHE/$SDIST" | sha256sum -c --status 2>/dev/null && return 0
	curl -sSfL -o "$CACHE/$SDIST.part" "$URL" || die "could not download $URL"
	echo "$SHA256  $CACHE/$SDIST.part" | sha256sum -c --status || die "$SDIST: sha256 differs from $SHA256"
	mv "$CACHE/$SDIST.part" "$CACHE/$SDIST"
}

# overlay_into SITE SRC OUT: OUT/lmcache is the package installed under SITE (its compiled
# extensions, which the sdist lacks) with the Python files of the (patched) source tree SRC on top.
overlay_into() {
	mkdir -p "$3"
	cp -a "$1/lmcache" "$3/"
	(cd "$2" && find lmcache -name '*.py' ! -name _version.py -exec cp --parents {} "$3/" \;)
}
