# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Pointing tests.e2e.daoskit at a real pool. daoskit reads its environment once, at import, so
a module that runs on a real pool calls `use_real_pool` before it (or anything that imports it)
is imported; this module imports nothing of the project for that reason."""

from __future__ import annotations

import os


def use_real_pool(container: str | None = None) -> None:
    """The real pool in DAOS_POOL through the libdaos in NIXL_DAOS_LIBDAOS, no daos-sim.
    `container`: DAOS_CONT for this process; without it, "unused" unless already set (the
    benchmarks name a container of their own per measurement, so DAOS_CONT only has to be set)."""
    os.environ["NIXL_DAOS_TESTBED"] = "1"
    if container is None:
        os.environ.setdefault("DAOS_CONT", "unused")
    else:
        os.environ["DAOS_CONT"] = container
