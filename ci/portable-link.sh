#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The linker of the portable build (ci/package.sh): zig's `cc` against glibc 2.28's symbol
# lists, so the plugin built on a newer distribution loads where glibc 2.28 runs (EL8, the
# manylinux_2_28 baseline NIXL's own wheel plugins keep to). zig is the only linker at hand that
# links against an older glibc than the one installed; a manylinux_2_28 container would do the
# same with gcc-toolset, but none can be had here.
#
# Two arguments are mapped, because zig reads them its own way:
#   -lstdc++  zig would link LLVM's libc++abi and libunwind statically, while the shim is compiled
#             by g++ against libstdc++ (NIXL's std::string and containers cross the ABI): link the
#             system's libstdc++.so.6 by path instead, so its symbols keep their GLIBCXX versions;
#   -lgcc_s   Rust's unwinder: the same libgcc_s.so.1 that libstdc++ unwinds with, so a C++
#             exception and a Rust panic never meet two unwinders.
# --allow-shlib-undefined: those two libraries are the build machine's and need its newer glibc
# themselves; at run time the host's own copies are loaded (the build scripts, executables linked
# the same way, run here).
# Which versions the result needs is checked afterwards (ci/package.sh, objdump -T).
# Environment: ZIG (the zig binary), NIXL_DAOS_GLIBC (default 2.28).
set -euo pipefail
zig=${ZIG:?ZIG must name the zig binary (ci/package.sh sets it)}
glibc=${NIXL_DAOS_GLIBC:-2.28}
stdcxx=$(g++ -print-file-name=libstdc++.so.6)
gcc_s=$(gcc -print-file-name=libgcc_s.so.1)
args=()
for a in "$@"; do
	case $a in
	-lstdc++) args+=("$stdcxx") ;;
	-lgcc_s) args+=("$gcc_s") ;;
	*) args+=("$a") ;;
	esac
done
exec "$zig" cc -target "x86_64-linux-gnu.$glibc" -Wl,--allow-shlib-undefined "${args[@]}"
