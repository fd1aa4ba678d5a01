# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""`python -m nixl_daos` is the `nixl-daos` command."""

import sys

from nixl_daos.cli import main

sys.exit(main())
