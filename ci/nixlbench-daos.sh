#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
#
# nixlbench with the DAOS plugin (on daos-sim) beside POSIX (on tmpfs), on a NIXL tree that
# ci/nixl-intree.sh prepared and built:   ci/nixlbench-daos.sh <workdir>
# Installs NIXL into <workdir>/stage, builds benchmark/nixlbench against it (its asio and
# tomlplusplus from NIXL's own subprojects/; nothing is downloaded), then runs WRITE and READ for
# both backends with the same block sizes, batches and iterations. Short by default; BENCH_ARGS
# adds or overrides nixlbench flags. Set NIXL_DAOS_LIBDAOS, DAOS_POOL and DAOS_CONT to measure a
# real pool instead of daos-sim.
set -euo pipefail

WORK="$(cd "${1:?usage: ci/nixlbench-daos.sh <workdir of ci/nixl-intree.sh>}" && pwd)"
BUILD="$WORK/build" NIXL="$WORK/nixl" STAGE="$WORK/stage"
JOBS="${JOBS:-2}"
NICE=(nice -n 10)
die() { printf 'nixlbench-daos: %s\n' "$*" >&2; exit 1; }
[ -f "$BUILD/build.ninja" ] || die "$BUILD is not a NIXL build (run ci/nixl-intree.sh first)"

printf '\n== install NIXL into %s\n' "$STAGE"
DESTDIR="$STAGE" meson install -C "$BUILD" --no-rebuild --quiet >/dev/null
prefix="$(meson introspect "$BUILD" --buildoptions | python3 -c \
    'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')"
libdir="$(meson introspect "$BUILD" --buildoptions | python3 -c \
    'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')"
NIXL_PREFIX="$STAGE$prefix"
[ -f "$NIXL_PREFIX/$libdir/plugins/libplugin_DAOS.so" ] || die "no DAOS plugin in $NIXL_PREFIX/$libdir/plugins"

printf '\n== build nixlbench\n'
BENCH_SRC="$NIXL/benchmark/nixlbench"
for sp in asio-1.30.2 tomlplusplus-3.4.0; do
    [ -d "$BENCH_SRC/subprojects/$sp" ] || cp -r "$NIXL/subprojects/$sp" "$BENCH_SRC/subprojects/"
done
BB="$WORK/nixlbench-build"
if [ ! -f "$BB/build.ninja" ]; then
    (cd "$BENCH_SRC" && "${NICE[@]}" meson setup "$BB" --wrap-mode=nodownload \
        --force-fallback-for=tomlplusplus -Dnixl_path="$NIXL_PREFIX" -Dwerror=false >/dev/null)
fi
"${NICE[@]}" ninja -C "$BB" -j"$JOBS" >/dev/null
BENCH="$BB/src/nixlbench"
[ -x "$BENCH" ] || BENCH="$(find "$BB" -name nixlbench -type f -perm -u+x | head -1)"
[ -x "$BENCH" ] || die "nixlbench was not built"

export LD_LIBRARY_PATH="$NIXL_PREFIX/$libdir:$NIXL_PREFIX/$libdir/plugins${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NIXL_PLUGIN_DIR="$NIXL_PREFIX/$libdir/plugins"
export NIXL_DAOS_LIBDAOS="${NIXL_DAOS_LIBDAOS:-$BUILD/src/plugins/daos/libdaos_sim.so}"
export DAOS_POOL="${DAOS_POOL:-sim}" DAOS_CONT="${DAOS_CONT:-kv}"

tmp="$(mktemp -d /dev/shm/nixlbench-posix.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
# Same shape for both: 1 to 4 MiB blocks, batches 1 to 16, one thread.
common=(--worker_type nixl --initiator_seg_type DRAM --start_block_size 1048576
        --max_block_size 4194304 --start_batch_size 1 --max_batch_size 16 --num_iter 50
        --warmup_iter 5 --total_buffer_size 268435456)
read -r -a extra <<< "${BENCH_ARGS:-}"
for backend in POSIX DAOS; do
    for op in WRITE READ; do
        printf '\n== nixlbench --backend %s --op_type %s\n' "$backend" "$op"
        args=(--backend "$backend" --op_type "$op" "${common[@]}")
        [ "$backend" = POSIX ] && args+=(--filepath "$tmp")
        log="$WORK/nixlbench-$backend-$op.log"
        "$BENCH" "${args[@]}" "${extra[@]}" >"$log" 2>&1 || { tail -20 "$log"; die "nixlbench --backend $backend --op_type $op failed (log: $log)"; }
        # The results table: the header row and the rows of figures.
        awk '/Block Size/ {p=1} p && NF >= 4' "$log" | grep -v '^-' || tail -5 "$log"
    done
done
