#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# TEST ONLY: links the shim with the in-memory stub engine (stub_engine.cpp) into a standalone
# libplugin_DAOS.so, with the flags build.rs uses, so the shim can be checked against the real NIXL
# agent without the Rust side:
#   tests/shim/build-standalone.sh /tmp/shimstub && \
#   .venv/bin/python tests/shim/check_nixl.py /tmp/shimstub/libplugin_DAOS.so --fail-param stub_fail=1
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: build-standalone.sh OUTDIR}"
mkdir -p "$out"
"${CXX:-g++}" -std=c++20 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror \
    -I"$root/include" -I"$root/src/shim" \
    "$root"/src/shim/*.cpp "$root/tests/shim/stub_engine.cpp" \
    -Wl,--no-undefined -o "$out/libplugin_DAOS.so"
echo "$out/libplugin_DAOS.so"
