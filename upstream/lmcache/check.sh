#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Checks that each LMCache patch here applies to LMCache's released source (the 0.5.6 sdist from
# PyPI, sha256-pinned, cached in .cache/upstream), one patch at a time on a fresh copy and then
# all in order. With a consumers venv (ci/consumers.sh; NIXL_DAOS_CONSUMERS_VENV or its default)
# it also runs the tests each patch adds, against the released package with the patch applied to
# its Python files, and checks that each test file fails without the patches; with the vLLM venv
# (NIXL_DAOS_VLLM_VENV or its default) it runs the CPU connector's tests (0003, 0004) there too,
# against vLLM's own CPU attention kernel; and, when the plugin
# is built (target/release), that the patched LMCache stores and finds KV chunks through it
# with `nixl_backend: DAOS` on daos-sim.
#
#   bash upstream/lmcache/check.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
source "$HERE/sdist.sh"
VENV=${NIXL_DAOS_CONSUMERS_VENV:-$HOME/.cache/nixl-daos/consumers-venv}

say() { printf '== lmcache/check.sh: %s\n' "$*"; }
die() { printf '== lmcache/check.sh: ERROR: %s\n' "$*" >&2; exit 1; }

fetch_sdist

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fresh() { rm -rf "$WORK/src" && mkdir "$WORK/src" && tar xzf "$CACHE/$SDIST" -C "$WORK/src" --strip-components=1; }

mapfile -t PATCHES < <(ls "$HERE"/*.patch)
[ ${#PATCHES[@]} -gt 0 ] || die "no patches in $HERE"
for p in "${PATCHES[@]}"; do
	fresh
	patch -d "$WORK/src" -p1 --quiet --forward --batch <"$p" >/dev/null || die "${p##*/} does not apply to lmcache $VERSION"
	find "$WORK/src" -name '*.rej' | grep -q . && die "${p##*/} left rejects"
	say "applies to lmcache $VERSION: ${p##*/}"
done
fresh
for p in "${PATCHES[@]}"; do
	patch -d "$WORK/src" -p1 --quiet --forward --batch <"$p" >/dev/null || die "${p##*/} does not apply after the ones before it"
done
say "all ${#PATCHES[@]} apply in order"

CPY="$VENV/bin/python"
if ! "$CPY" -c 'import importlib.metadata as m, sys; sys.exit(m.version("lmcache") != sys.argv[1])' "$VERSION" 2>/dev/null; then
	say "SKIP running the patches' tests: no consumers venv with lmcache $VERSION at $VENV (bash ci/consumers.sh)"
	exit 0
fi

# The installed package has the compiled extensions the sdist lacks; its Python files are the
# sdist's. Overlay: a copy of the installed package with the patched Python files on top.
site=$("$CPY" -c 'import lmcache, os; print(os.path.dirname(os.path.dirname(lmcache.__file__)))')
mkdir -p "$WORK/plain"
cp -a "$site/lmcache" "$WORK/plain/"
overlay_into "$site" "$WORK/src" "$WORK/patched"

mapfile -t TESTS < <(cat "${PATCHES[@]}" | sed -n 's|^+++ b/\(tests/.*\.py\)$|\1|p' | sort -u)
[ ${#TESTS[@]} -gt 0 ] || die "the patches add no tests"
# The tests and what they read (examples/), from the patched sdist, without its lmcache/ (which
# would shadow the package under test).
mkdir -p "$WORK/run"
cp -a "$WORK/src/tests" "$WORK/src/examples" "$WORK/run/"
run_tests() { # $1: the package dir to test, $2: time limit (s), then the test files
	local pkg=$1 limit=$2
	shift 2
	(cd "$WORK/run" && PYTHONPATH="$pkg" LMCACHE_LOG_LEVEL=WARNING timeout --signal=KILL "$limit" "$CPY" -m pytest -q -p no:cacheprovider --noconftest \
		"$@")
}
run_tests "$WORK/patched" 300 "${TESTS[@]}" >"$WORK/patched.log" 2>&1 || { tail -40 "$WORK/patched.log"; die "the patches' tests fail with the patches applied"; }
say "patched: $(tail -n 1 "$WORK/patched.log")"
# Unpatched, each test file must fail on its own (one file's import error would otherwise fail
# the whole run and hide that another file's tests pass). pytest itself may never exit: the
# leftover event-loop thread that 0002 stops keeps it alive after the tests ran, hence the short
# limit.
for t in "${TESTS[@]}"; do
	if run_tests "$WORK/plain" 60 "$t" >"$WORK/plain.log" 2>&1; then
		die "$t also passes on the unpatched lmcache $VERSION: it tests nothing"
	fi
	say "unpatched, $t (expected to fail): $(grep -E '[0-9]+ (passed|failed|errors?)( |,|$)' "$WORK/plain.log" | tail -n 1)"
done

# The CPU connector's packing against vLLM's own CPU attention kernel (cpu_attn_reshape_and_cache)
# needs vLLM's CPU build; the consumers venv skips that one test. With the vLLM venv
# (NIXL_DAOS_VLLM_VENV, default ~/.cache/nixl-daos/vllm-venv) the CPU connector's tests run there
# too, against its installed lmcache with the patched Python files on top, and must skip nothing.
VLLM_VENV=${NIXL_DAOS_VLLM_VENV:-$HOME/.cache/nixl-daos/vllm-venv}
VPY="$VLLM_VENV/bin/python"
if "$VPY" -c 'import importlib.metadata as m, sys, vllm._custom_ops; sys.exit(m.version("lmcache") != sys.argv[1])' "$VERSION" >/dev/null 2>&1; then
	vsite=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	overlay_into "$vsite" "$WORK/src" "$WORK/vpatched"
	(cd "$WORK/run" && PYTHONPATH="$WORK/vpatched" LMCACHE_LOG_LEVEL=WARNING timeout --signal=KILL 300 "$VPY" -m pytest -q -p no:cacheprovider \
		--noconftest -rs tests/v1/test_cpu_connector.py tests/v1/test_cpu_connector_factory.py) >"$WORK/vllm.log" 2>&1 ||
		{ tail -40 "$WORK/vllm.log"; die "the CPU connector's tests fail in the vLLM venv ($VLLM_VENV)"; }
	grep -q ' skipped' "$WORK/vllm.log" && { grep SKIPPED "$WORK/vllm.log"; die "the CPU connector's tests skipped some in the vLLM venv"; }
	say "vLLM venv, CPU connector vs vLLM's CPU kernel: $(tail -n 1 "$WORK/vllm.log")"
else
	say "SKIP the CPU connector's tests against vLLM's CPU kernel: no vLLM venv with lmcache $VERSION at $VLLM_VENV"
fi

# The patched LMCache, backend name DAOS, through our plugin (as libplugin_DAOS.so) on daos-sim.
PLUGIN="$ROOT/target/release/libplugin_DAOS.so" SIM="$ROOT/target/release/libdaos_sim.so"
if [ ! -f "$PLUGIN" ] || [ ! -f "$SIM" ]; then
	say "SKIP the end-to-end check: build the plugin first (cargo build --release --workspace)"
	exit 0
fi
mkdir -p "$WORK/plugins"
ln -s "$PLUGIN" "$WORK/plugins/libplugin_DAOS.so"
cat >"$WORK/e2e.py" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import torch
import lmc
a = lmc.Setup(bucket="lmcache-daos-check", backend="DAOS")
ia, ea = lmc.build(a)
toks = lmc.tokens_for(5, 3 * a.chunk)
lmc.store(ea, a, toks)
b = lmc.Setup(bucket="lmcache-daos-check", backend="DAOS")
ib, eb = lmc.build(b)  # a second engine: everything it finds comes from DAOS
mask, out = lmc.retrieve(eb, b, toks)
ok = eb.lookup(toks) == toks.numel() and bool(mask.all()) and torch.equal(out, lmc.kv_for(b, toks))
lmc.destroy(ib)
lmc.destroy(ia)
print("ok" if ok else "MISMATCH")
EOF
out=$(cd "$WORK" && PYTHONPATH="$WORK/patched" NIXL_PLUGIN_DIR="$WORK/plugins" NIXL_DAOS_LIBDAOS="$SIM" DAOS_POOL=sim \
	LMCACHE_LOG_LEVEL=WARNING PYTHONHASHSEED=0 timeout --signal=KILL 300 "$CPY" e2e.py "$ROOT/tests/consumers" 2>"$WORK/e2e.log") ||
	{ tail -30 "$WORK/e2e.log"; die "the patched LMCache with nixl_backend DAOS failed on daos-sim"; }
[ "$(echo "$out" | grep -x -e ok -e MISMATCH | tail -n 1)" = ok ] || { tail -30 "$WORK/e2e.log"; die "the patched LMCache with nixl_backend DAOS: $out"; }
say "patched LMCache, nixl_backend DAOS, through our plugin on daos-sim: stored, found by a second engine, bytes equal"
