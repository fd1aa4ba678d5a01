# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""nixl-daos: the DAOS storage backend for NIXL, and the `nixl-daos` command that checks and
installs it (`nixl-daos doctor`, `nixl-daos install --as NAME`)."""

from pathlib import Path

__version__ = "0.1.0"

# The plugin this package ships (the same file the wheel also puts in NIXL's plugin directory).
PLUGIN = Path(__file__).resolve().parent / "libplugin_DAOS.so"
