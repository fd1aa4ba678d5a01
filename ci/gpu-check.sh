#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The plugin's VRAM path on a real GPU (tests/gpu/gpu_check.py), in two steps:
#
#   bash ci/gpu-check.sh prepare   on a build host with network or a pip cache: builds the
#                                  workspace, and puts in target/gpu-check/ what the GPU host
#                                  needs: the plugin and daos-sim without debug info, and the
#                                  parts of NIXL's nixl-cu13==1.5.1 wheel its Python agent loads
#                                  (its extension modules and their libraries, no plugins), one
#                                  xz tarball per CPython 3.10-3.13 (about 7 MB each). Checks that
#                                  the whole stays under 64 MiB (what can be sent to such a host).
#   bash ci/gpu-check.sh run       on the GPU host, no network, from a checkout with
#                                  target/gpu-check/ beside it: picks the tarball of the python3
#                                  that imports torch, and runs the check (about 1 minute; killed
#                                  at 7). Exits with the check's status; its last line is JSON.
#   bash ci/gpu-check.sh run --sim the same run on any host, against the CUDA driver stand-in
#                                  (tests/cuda-sim), which is how `run` itself is tested here.
#
# GPU_CHECK_PYTHON picks the interpreter for `run` (default: python3).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
source "$ROOT/ci/lib.sh"
OUT=$ROOT/target/gpu-check
WHEEL=nixl-cu13==1.5.1
PYTHONS="3.10 3.11 3.12 3.13"
LIMIT=$((64 << 20))

prepare() {
	source "$ROOT/ci/setup.sh" # the release build, and VPY
	rm -rf "$OUT" && mkdir -p "$OUT"
	local so
	for so in libplugin_DAOS.so libdaos_sim.so libcuda_sim.so; do
		objcopy --strip-debug "target/release/$so" "$OUT/$so"
	done
	local wheels="$ROOT/target/gpu-check-wheels" v
	mkdir -p "$wheels"
	for v in $PYTHONS; do
		"$VPY" -m pip download -q --no-deps --only-binary=:all: --python-version "$v" "$WHEEL" -d "$wheels" ||
			die "cannot download $WHEEL for CPython $v (network or pip cache needed)"
	done
	"$VPY" - "$wheels" "$OUT" <<'EOF'
import glob, io, os, re, subprocess, sys, tarfile, tempfile, zipfile
wheels, out = sys.argv[1], sys.argv[2]
for whl in sorted(glob.glob(os.path.join(wheels, "nixl_cu13-1.5.1-cp3*-manylinux_2_28_x86_64.whl"))):
    tag = re.search(r"-(cp3\d+)-", whl).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        zipfile.ZipFile(whl).extractall(tmp)
        libs = {}
        for d in ("nixl_cu13.libs", ".nixl_cu13.mesonpy.libs"):
            for f in os.listdir(os.path.join(tmp, d)):
                if os.path.isfile(os.path.join(tmp, d, f)):
                    libs[f] = os.path.join(d, f)
        # The agent's extension modules and every library of the wheel they need, transitively.
        todo = [os.path.join("nixl_cu13", f) for f in os.listdir(os.path.join(tmp, "nixl_cu13")) if f.endswith(".so")]
        keep = set()
        while todo:
            p = todo.pop()
            if p in keep:
                continue
            keep.add(p)
            dyn = subprocess.run(["readelf", "-d", os.path.join(tmp, p)], capture_output=True, text=True).stdout
            todo += [libs[n] for n in re.findall(r"\(NEEDED\).*\[(.*)\]", dyn) if n in libs]
        keep |= {os.path.join("nixl_cu13", f) for f in os.listdir(os.path.join(tmp, "nixl_cu13")) if f.endswith(".py")}
        dest = os.path.join(out, f"nixl-cu13-{tag}.tar.xz")
        with tarfile.open(dest, "w:xz", preset=6) as tf:
            for p in sorted(keep):
                tf.add(os.path.join(tmp, p), arcname=p)
        print(f"{os.path.basename(dest)}: {len(keep)} files, {os.path.getsize(dest) / 1e6:.1f} MB")
EOF
	local total
	total=$(du -sb "$OUT" | cut -f1)
	[ "$total" -lt "$LIMIT" ] || die "target/gpu-check holds $total bytes, over the 64 MiB that can be sent"
	say "target/gpu-check: $((total >> 20)) MiB; on the GPU host: bash ci/gpu-check.sh run"
}

run() {
	local mode=torch
	[ "${1:-}" = --sim ] && mode=sim
	[ -f "$OUT/libplugin_DAOS.so" ] || die "no target/gpu-check: run \`bash ci/gpu-check.sh prepare\` on a build host first"
	local py=${GPU_CHECK_PYTHON:-python3} tag
	tag=$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
	[ -f "$OUT/nixl-cu13-$tag.tar.xz" ] || die "no NIXL for $tag in target/gpu-check (CPython 3.10-3.13 are prepared)"
	if [ "$mode" = torch ]; then
		"$py" -c 'import torch, numpy; assert torch.cuda.is_available()' ||
			die "$py cannot use a GPU through PyTorch (with numpy); set GPU_CHECK_PYTHON"
		command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
	fi
	tmp=$(mktemp -d) # global: the EXIT trap runs after run() returns
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/site" "$tmp/plugins"
	"$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$OUT/nixl-cu13-$tag.tar.xz" "$tmp/site"
	cp "$OUT/libplugin_DAOS.so" "$tmp/plugins/"
	local glibc
	glibc=$(ldd --version 2>/dev/null | head -1 | awk '{print $NF}')
	say "glibc $glibc; $py $tag; memory: $mode"
	# The plugin built on Debian 12 needs glibc 2.34 (and GLIBCXX 3.4.29).
	if [ "$(printf '%s\n2.34\n' "$glibc" | sort -V | head -1)" != 2.34 ]; then
		die "this host's glibc $glibc is older than the 2.34 the plugin was built for: build it on a host as old as this one"
	fi
	local args=(--plugin-dir "$tmp/plugins" --daos-sim "$OUT/libdaos_sim.so" --nixl nixl_cu13 --memory "$mode")
	[ "$mode" = sim ] && args+=(--cuda-sim "$OUT/libcuda_sim.so")
	local rc=0
	PYTHONPATH="$tmp/site${PYTHONPATH:+:$PYTHONPATH}" timeout --signal=KILL 420 "$py" tests/gpu/gpu_check.py "${args[@]}" || rc=$?
	[ "$rc" = 137 ] && say "ERROR: the check was killed after 7 minutes"
	return "$rc"
}

case "${1:-}" in
prepare) prepare ;;
run) shift; run "$@" ;;
*) die "usage: bash ci/gpu-check.sh prepare | run [--sim]" ;;
esac
