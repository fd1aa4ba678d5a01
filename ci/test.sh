#!/usr/bin/env bash
# CI entry point (via .ci/run): set-up and release build (ci/setup.sh), the Rust tests of the whole
# workspace, then the end-to-end tests through the real NIXL 1.5.1 agent against daos-sim.
# Exits non-zero on any failure. Extra arguments go to pytest (e.g. ci/test.sh -k fold).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

say "ci/check-bindings.sh (committed libdaos declarations == bindgen's output)"
bash ci/check-bindings.sh

say "cargo test --release --workspace"
cargo test --release --workspace

say "shim ABI checks (tests/shim)"
# Our vtable slot by slot against the wheel's POSIX engine; the shim alone (stub engine) and the
# whole plugin (on daos-sim) through the real NIXL agent.
"$VPY" tests/shim/check_vtable.py target/release/libplugin_DAOS.so >/dev/null || die "vtable check failed (run: $VPY tests/shim/check_vtable.py)"
shimstub=$(mktemp -d)
bash tests/shim/build-standalone.sh "$shimstub" >/dev/null
"$VPY" tests/shim/check_nixl.py "$shimstub/libplugin_DAOS.so" --fail-param stub_fail=1 >/dev/null 2>&1 ||
	die "shim check (stub engine) failed (run: $VPY tests/shim/check_nixl.py $shimstub/libplugin_DAOS.so --fail-param stub_fail=1)"
NIXL_DAOS_LIBDAOS="$ROOT/target/release/libdaos_sim.so" "$VPY" tests/shim/check_nixl.py target/release/libplugin_DAOS.so \
	--param pool=sim --param container=shimcheck --param create_container=true --fail-param fold=maybe >/dev/null 2>&1 ||
	die "shim check (plugin on daos-sim) failed (run it without >/dev/null: see ci/test.sh)"
rm -rf "$shimstub"

say "pytest tests/e2e"
# The outer timeout is a backstop for a hang inside a C call, where pytest cannot interrupt.
rc=0
timeout --signal=KILL 900 "$VPY" -m pytest tests/e2e -v -ra --durations=10 "$@" || rc=$?
case $rc in
0) say "all tests passed" ;;
5) die "pytest collected no tests" ;;
137) die "pytest was killed after 900 s (a hang)" ;;
*) die "pytest failed (exit $rc)" ;;
esac
