#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# The end-to-end tests against a real DAOS pool, from a host with the DAOS client installed and
# daos_agent running. Tests that need daos-sim's controls or counters (hang, injected errors,
# RPC counts) are skipped.
#
#   DAOS_POOL=<pool> DAOS_CONT=<container> bash ci/e2e-testbed.sh [pytest args]
#
# NIXL_DAOS_LIBDAOS picks the libdaos to load (default libdaos.so.2); DAOS_PREFIX the headers
# to build against. The container must exist (daos cont create <pool> <container>).
# NIXL_DAOS_TEST_TARGETS=<the pool's target count> also checks the object's group count (at RF0).
# Tests that kill and restart the engine need NIXL_DAOS_LOCAL=<daos-local.sh> (ci/test.sh sets it).
# D_LOG_FILE: where libdaos logs (unset: the plugin picks $TMPDIR/nixl-daos.<uid>/libdaos.log).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

[ -n "${DAOS_POOL:-}" ] && [ -n "${DAOS_CONT:-}" ] \
	|| die "set DAOS_POOL and DAOS_CONT to a real pool and container (labels or UUIDs)"
export NIXL_DAOS_TESTBED=1
say "end-to-end tests against pool $DAOS_POOL, container $DAOS_CONT, ${NIXL_DAOS_LIBDAOS:-libdaos.so.2}"
"$VPY" -m pytest tests/e2e -q -rs "$@"
