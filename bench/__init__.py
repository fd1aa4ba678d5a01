# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The benchmarks of nixl-daos, a package: run its modules from the repository root with
`python -m`, e.g.

    .venv/bin/python -m bench.kv_bench --scale 0.1
    .venv/bin/python -m bench.cpu_cost --no-perf --workloads small

Its modules import each other as `bench.<module>`, and the e2e tests' helper module as
`tests.e2e.daoskit` (tests/ and tests/e2e have no __init__.py: namespace packages, found on the
repository root that `python -m` puts on sys.path, so nothing here edits sys.path).

Importing the package sets OPENBLAS_NUM_THREADS=1 (unless it is set) before any module of it
imports numpy: numpy's BLAS threads spin, and nothing here uses BLAS.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
