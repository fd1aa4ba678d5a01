#!/usr/bin/env bash
# Rust gates a NIXL maintainer's CI would apply: rustfmt (rustfmt.toml) and clippy with warnings
# as errors. The lints themselves (unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)
# are set in Cargo.toml's [workspace.lints], so a plain `cargo clippy` enforces them too.
# Usage: bash ci/lint.sh   (called by ci/test.sh; fix formatting with `cargo fmt --all`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source ci/lib.sh
for tool in rustfmt clippy; do
	if ! cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1; then
		command -v rustup >/dev/null || die "cargo ${tool/rustfmt/fmt} not found: install the $tool component"
		say "rustup component add $tool"
		rustup component add "$tool" >/dev/null
	fi
done
say "cargo fmt --all --check"
cargo fmt --all --check || die "formatting differs from rustfmt.toml: run cargo fmt --all"
say "cargo clippy --release --workspace --all-targets -- -D warnings"
cargo clippy --release --workspace --all-targets --quiet -- -D warnings || die "clippy found problems (see above)"
say "rustfmt and clippy clean"
