#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the DAOS plugin's Rust parts for meson (see meson.build), offline and with the committed
# Cargo.lock, the way src/bindings/rust/meson.build drives cargo:
#   cargo_build.sh CARGO MANIFEST TARGET_DIR VENDOR_DIR OUTPUT engine|sim
#   engine: the nixl-daos crate as a staticlib, without its own shim (NIXL_DAOS_SHIM=external:
#           meson compiles the shim against NIXL's headers)
#   sim:    daos-sim (libdaos_sim.so), the libdaos stand-in the tests load
# VENDOR_DIR, when it exists, replaces crates.io (cargo vendor output); otherwise cargo uses the
# crates already in CARGO_HOME and fails with its own message if one is missing.
# OUTPUT is replaced only when its content changed, so ninja relinks only when Rust changed.
set -eu
cargo=$1 manifest=$2 target=$3 vendor=$4 out=$5 what=$6

if [ -d "$vendor" ]; then
    set -- --config 'source.crates-io.replace-with="nixl-daos-vendor"' \
        --config "source.nixl-daos-vendor.directory=\"$vendor\""
else
    set --
fi
common="--manifest-path $manifest --target-dir $target --release --locked --offline"

case $what in
engine)
    # shellcheck disable=SC2086
    NIXL_DAOS_SHIM=external "$cargo" "$@" rustc $common -p nixl-daos --lib --crate-type staticlib
    built=$target/release/libplugin_DAOS.a
    ;;
sim)
    # shellcheck disable=SC2086
    "$cargo" "$@" build $common -p daos-sim --lib
    built=$target/release/libdaos_sim.so
    ;;
*)
    echo "cargo_build.sh: unknown part '$what' (engine or sim)" >&2
    exit 2
    ;;
esac

if ! cmp -s "$built" "$out"; then
    cp "$built" "$out.tmp"
    mv "$out.tmp" "$out"
fi
