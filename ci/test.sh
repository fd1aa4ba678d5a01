#!/usr/bin/env bash
# CI entry point (via .ci/run): set-up and release build (ci/setup.sh), the Rust tests of the whole
# workspace, then the end-to-end tests through the real NIXL 1.5.1 agent against daos-sim.
# Exits non-zero on any failure. Extra arguments go to pytest (e.g. ci/test.sh -k fold).
# --long (first argument) runs the randomized model check (tests/e2e/test_model.py) for 10
# minutes instead of 40 s; NIXL_DAOS_MODEL_SECONDS and NIXL_DAOS_MODEL_SEED set it directly.
set -euo pipefail
if [[ "${1:-}" == "--long" ]]; then
    shift
    export NIXL_DAOS_MODEL_SECONDS="${NIXL_DAOS_MODEL_SECONDS:-600}"
fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

say "ci/check-bindings.sh (committed libdaos declarations == bindgen's output)"
bash ci/check-bindings.sh

say "cargo test --release --workspace"
cargo test --release --workspace

say "pytest tests/e2e"
# The outer timeout is a backstop for a hang inside a C call, where pytest cannot interrupt.
rc=0
timeout --signal=KILL $((900 + ${NIXL_DAOS_MODEL_SECONDS:-0})) "$VPY" -m pytest tests/e2e -v -ra --durations=10 "$@" || rc=$?
case $rc in
0) say "all tests passed" ;;
5) die "pytest collected no tests" ;;
137) die "pytest was killed after 900 s (a hang)" ;;
*) die "pytest failed (exit $rc)" ;;
esac
