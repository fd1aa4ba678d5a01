#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Rust gates a NIXL maintainer's CI would apply: rustfmt (rustfmt.toml) and clippy with warnings
# as errors. The lints themselves (unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)
# are set in Cargo.toml's [workspace.lints], so a plain `cargo clippy` enforces them too.
# Usage: bash ci/lint.sh   (called by ci/test.sh; fix formatting with `cargo fmt --all`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source ci/lib.sh

# Every tracked source file carries the SPDX header in its first 5 lines (the two lines of
# upstream/src/plugins/daos/daos_plugin.cpp, in the file's comment syntax). Symbolic links are skipped
# (their targets are checked); patch, lock, JSON and Markdown files are not in the list.
say "SPDX headers"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	missing=0
	while IFS= read -r -d '' f; do
		[ -f "$f" ] && [ ! -L "$f" ] || continue
		if ! head -n 5 -- "$f" | grep -q 'SPDX-License-Identifier:'; then
			printf '%s: no SPDX-License-Identifier line in its first 5 lines\n' "$f" >&2
			missing=$((missing + 1))
		fi
	done < <(git ls-files -z -- '*.rs' '*.c' '*.h' '*.cpp' '*.hpp' '*.sh' '*.py' '*.toml' '*meson.build' .ci/run)
	[ "$missing" = 0 ] || die "$missing file(s) without an SPDX header (add the two lines of upstream/src/plugins/daos/daos_plugin.cpp)"
else
	say "not a git checkout: SPDX check skipped"
fi
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
