#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
#
# The check that upstream/ still applies to NIXL and passes there:
#   ci/nixl-intree.sh <nixl-source: .tar.* | directory | git URL> [<workdir>]
# Unpacks (or copies, or clones and checks out $NIXL_COMMIT from) the NIXL source the caller
# names, applies upstream/ (every file except top-level *.md and *.patch copied to the same path,
# then every *.patch with `patch -p1` in name order), vendors the Rust crates from the local cargo
# cache, builds NIXL with meson (CPU only, UCX off), runs the DAOS meson tests (daos_plugin_gtest
# on NIXL's generic plugin harness, daos_agent_test through the agent) and, unless
# NIXL_INTREE_BENCH=0, a short nixlbench run of DAOS beside POSIX.
# It downloads nothing: the NIXL source comes from the caller, the crates from CARGO_HOME (run
# `cargo fetch --locked` once on a machine that has never built this crate).
# The workdir (default target/nixl-intree) is reused: the applied tree is synced into
# <workdir>/nixl file by file, so a second run rebuilds only what changed.
# NIXL's build needs (Debian 12): meson ninja-build cmake libgtest-dev libgmock-dev libgflags-dev
# liburing-dev libaio-dev pybind11-dev libasio-dev libnuma-dev libhwloc-dev, with abseil, taskflow,
# tomlplusplus and asio as meson subprojects inside the NIXL source (its with-subprojects tarball).
# Environment: NIXL_COMMIT (git sources; default the commit upstream/ was made against),
# JOBS (ninja -j, default 2), NIXL_DAOS_LIBDAOS/DAOS_POOL/DAOS_CONT (run the tests on a real pool).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="${1:?usage: ci/nixl-intree.sh <nixl tarball | directory | git URL> [workdir]}"
WORK="$(mkdir -p "${2:-$ROOT/target/nixl-intree}" && cd "${2:-$ROOT/target/nixl-intree}" && pwd)"
NIXL_COMMIT="${NIXL_COMMIT:-8770b655a6b17b5cdf7d2b56b6e0be5392496df5}"
JOBS="${JOBS:-2}"
NICE=(nice -n 10)

say() { printf '\n== %s\n' "$*"; }
die() { printf 'nixl-intree: %s\n' "$*" >&2; exit 1; }
for tool in meson ninja patch cargo python3; do
    command -v "$tool" >/dev/null || die "$tool not found (NIXL's build needs meson, ninja-build, patch; the plugin needs cargo)"
done

FRESH="$WORK/fresh"
rm -rf "$FRESH"
mkdir -p "$FRESH"

say "NIXL source: $SRC"
case "$SRC" in
*.tar|*.tar.gz|*.tgz|*.tar.xz|*.txz|*.tar.bz2)
    [ -f "$SRC" ] || die "no such file: $SRC"
    tar -xf "$SRC" -C "$FRESH"
    # A tarball holds one top directory (nixl/); use it as the tree.
    tops=("$FRESH"/*)
    [ ${#tops[@]} -eq 1 ] && [ -d "${tops[0]}" ] || die "$SRC: expected one top-level directory"
    mv "${tops[0]}" "$FRESH/tree"
    ;;
*://*|git@*)
    git clone --quiet "$SRC" "$FRESH/tree"
    git -C "$FRESH/tree" checkout --quiet "$NIXL_COMMIT" || die "$SRC has no commit $NIXL_COMMIT (set NIXL_COMMIT)"
    ;;
*)
    [ -f "$SRC/meson.build" ] || die "$SRC: not a NIXL source directory (no meson.build)"
    mkdir -p "$FRESH/tree"
    (cd "$SRC" && tar --exclude=./build --exclude=./.git -cf - .) | tar -xf - -C "$FRESH/tree"
    ;;
esac
TREE="$FRESH/tree"
grep -q "'POSIX'" "$TREE/meson.build" || die "$SRC: not NIXL (its meson.build has no plugin list)"

say "apply upstream/"
# Files: the whole contract is "same path in NIXL's tree"; symlinks (the Rust crate) are copied
# as the files they point to.
(cd "$ROOT/upstream" && find -L . -type f ! -name '*.patch' ! -path './*.md' -print0) |
    while IFS= read -r -d '' f; do
        case "$f" in ./*/*) ;; *.md) continue ;; esac
        mkdir -p "$TREE/$(dirname "$f")"
        cp -L "$ROOT/upstream/$f" "$TREE/$f"
    done
for p in "$ROOT"/upstream/*.patch; do
    echo "patch -p1 < upstream/$(basename "$p")"
    patch -p1 --quiet --forward --no-backup-if-mismatch -d "$TREE" < "$p" || die "$(basename "$p") does not apply"
done

say "vendor the Rust crates (from the local cargo cache)"
crate="$TREE/src/plugins/daos/rust"
if cargo vendor --quiet --locked --offline --versioned-dirs --manifest-path "$crate/Cargo.toml" \
    "$crate/vendor" >/dev/null 2>"$WORK/vendor.log"; then
    echo "vendored $(ls "$crate/vendor" | wc -l) crates into src/plugins/daos/rust/vendor"
else
    rm -rf "$crate/vendor"
    echo "cargo vendor --offline failed (see $WORK/vendor.log): building from CARGO_HOME offline instead"
fi

say "sync into $WORK/nixl (changed files only)"
python3 - "$TREE" "$WORK/nixl" <<'PY'
import filecmp, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
changed = 0
for d, dirs, files in os.walk(src):
    rel = os.path.relpath(d, src)
    os.makedirs(os.path.join(dst, rel), exist_ok=True)
    for f in files:
        s, t = os.path.join(d, f), os.path.join(dst, rel, f)
        if not os.path.exists(t) or not filecmp.cmp(s, t, shallow=False):
            shutil.copy2(s, t)
            changed += 1
# Nothing is deleted: meson writes into the source tree's subprojects/ during setup.
print(f"{changed} files copied")
PY
rm -rf "$FRESH"

BUILD="$WORK/build"
say "build NIXL with the DAOS plugin ($BUILD)"
if [ ! -f "$BUILD/build.ninja" ]; then
    (cd "$WORK/nixl" && "${NICE[@]}" meson setup "$BUILD" --wrap-mode=nodownload \
        --force-fallback-for=tomlplusplus -Dbuildtype=debug -Dwerror=false \
        -Dbuild_examples=false -Ddisable_plugins=UCX)
fi
"${NICE[@]}" ninja -C "$BUILD" -j"$JOBS"
[ -f "$BUILD/src/plugins/daos/libplugin_DAOS.so" ] || die "the DAOS plugin was not built (see meson's output: cargo missing?)"

say "DAOS tests (meson test, names with daos)"
mapfile -t tests < <(meson test -C "$BUILD" --list 2>/dev/null | grep -i daos | sed 's/.* \/ //')
[ ${#tests[@]} -ge 2 ] || die "expected the daos meson tests, found: ${tests[*]:-none}"
meson test -C "$BUILD" --no-rebuild --print-errorlogs "${tests[@]}"

if [ "${NIXL_INTREE_BENCH:-1}" != 0 ]; then
    bash "$ROOT/ci/nixlbench-daos.sh" "$WORK"
fi
