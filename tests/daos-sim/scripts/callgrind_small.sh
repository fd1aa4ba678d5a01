#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Instruction counts of the store's small-extent path: runs copy_bench's `small_fold` under
# callgrind with 1 and 3 passes, collecting only inside io::exec_update / io::exec_fetch (the
# server side plus the data copy), and prints Ir per RPC (one RPC = one key: 64 recxs x 4 KiB)
# from the difference, so the first write (chunk allocation) and the set-up drop out.
#
#   tests/daos-sim/scripts/callgrind_small.sh        # from the repo root; about a minute
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo test -p daos-sim --release --test copy_bench --no-run 2>&1 | tail -1
bin=$(ls -t target/release/deps/copy_bench-* | grep -v '\.d$' | head -1)
out=$(mktemp -d)
keys=256
ir() { # file -> "total memcpy" Ir
    callgrind_annotate "$1" 2>/dev/null | awk '
        /PROGRAM TOTALS/ { gsub(",", "", $1); t = $1 }
        /__mem(cpy|move)/ { gsub(",", "", $1); m += $1 }
        END { print t, m + 0 }'
}
for op in update fetch; do
    for n in 1 3; do
        DAOS_SIM_SMALL_REPS=$n valgrind --tool=callgrind --callgrind-out-file="$out/$op.$n" \
            --toggle-collect="*io::exec_$op" "$bin" small_fold --ignored --test-threads=1 >"$out/$op.$n.log" 2>&1
    done
    read -r t1 m1 <<<"$(ir "$out/$op.1")"
    read -r t3 m3 <<<"$(ir "$out/$op.3")"
    rpcs=$((2 * keys))
    awk -v op="$op" -v t=$((t3 - t1)) -v m=$((m3 - m1)) -v r=$rpcs 'BEGIN {
        printf "%-6s %8.0f Ir/RPC  (%6.0f Ir/extent), memcpy %8.0f Ir/RPC = %4.1f%%, rest %7.0f Ir/RPC\n",
            op, t / r, t / r / 64, m / r, 100 * m / t, (t - m) / r }'
done
rm -rf "$out"
