#!/usr/bin/env bash
# Python lint: `ruff check` and `ruff format --check` over the repo's Python (config: ruff.toml).
# Installs a pinned ruff from PyPI into .cache/ruff-venv (git-ignored) on first use, so the result
# does not depend on whatever ruff a machine happens to have. Exits non-zero on any finding.
# Fix locally with: .cache/ruff-venv/bin/ruff check --fix . && .cache/ruff-venv/bin/ruff format .
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
source ci/lib.sh

RUFF_VERSION=0.17.5
LINT_VENV="$ROOT/.cache/ruff-venv"
RUFF="$LINT_VENV/bin/ruff"

if [ ! -x "$RUFF" ] || [ "$("$RUFF" --version 2>/dev/null)" != "ruff $RUFF_VERSION" ]; then
	say "installing ruff $RUFF_VERSION into .cache/ruff-venv"
	rm -rf "$LINT_VENV"
	python3 -m venv "$LINT_VENV" || die "python3 -m venv failed (install python3-venv)"
	"$LINT_VENV/bin/python" -m pip install -q --disable-pip-version-check "ruff==$RUFF_VERSION"
fi

rc=0
say "ruff check"
"$RUFF" check --no-cache . || rc=1
say "ruff format --check"
"$RUFF" format --check --no-cache . || rc=1
[ $rc = 0 ] || die "ruff found problems (fix: $RUFF check --fix . && $RUFF format .)"
say "Python lint clean"
