#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Python lint: `ruff check` and `ruff format --check` over the repo's Python (config: ruff.toml).
# Installs a pinned ruff from PyPI into .cache/ruff (git-ignored) on first use, so the result
# does not depend on whatever ruff a machine happens to have. Exits non-zero on any finding.
# Fix locally with: .cache/ruff/bin/ruff check --fix . && .cache/ruff/bin/ruff format .
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
source ci/lib.sh

RUFF_VERSION=0.17.5
RUFF_DIR="$ROOT/.cache/ruff"
RUFF="$RUFF_DIR/bin/ruff"

if [ ! -x "$RUFF" ] || [ "$("$RUFF" --version 2>/dev/null)" != "ruff $RUFF_VERSION" ]; then
	# The project venv's pip when there is one (ci/setup.sh makes it), else the system Python's.
	py=python3
	[ -x "$ROOT/.venv/bin/python" ] && py="$ROOT/.venv/bin/python"
	say "installing ruff $RUFF_VERSION into .cache/ruff"
	rm -rf "$RUFF_DIR"
	"$py" -m pip install -q --disable-pip-version-check --target "$RUFF_DIR" "ruff==$RUFF_VERSION" ||
		die "could not install ruff $RUFF_VERSION with $py -m pip"
fi

rc=0
say "ruff check"
"$RUFF" check --no-cache . || rc=1
say "ruff format --check"
"$RUFF" format --check --no-cache . || rc=1
[ $rc = 0 ] || die "ruff found problems (fix: $RUFF check --fix . && $RUFF format .)"
say "Python lint clean"
