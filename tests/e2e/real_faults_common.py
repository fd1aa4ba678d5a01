# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""What the consumers of tests/e2e/test_real_faults.py share: the environment set before the
first agent, NIXL's error types, the engine's restart, and polling one request to its end.
Importing it prepares the environment (daoskit.prepare_environment), before any agent exists."""

import os
import time

import daoskit

daoskit.prepare_environment()
ERRS = daoskit.nixl_errors()


def restart():
    # daos-local.sh stop + start (a fresh format), then the container again.
    import subprocess

    for cmd in ("stop", "start"):
        subprocess.run(["bash", os.environ["NIXL_DAOS_LOCAL"], cmd], check=True, capture_output=True, timeout=240)
    subprocess.run(
        [os.environ["DAOS_LOCAL_BIN"] + "/daos", "cont", "create", os.environ["DAOS_POOL"], os.environ["DAOS_CONT"]],
        check=True,
        capture_output=True,
        timeout=120,
    )


def finish(agent, h, state, t_post, limit):
    # Polls one request to DONE or an error; returns (outcome, seconds since its post).
    try:
        while state not in ("DONE", "ERR"):
            if time.monotonic() - t_post > limit:
                return "STUCK", time.monotonic() - t_post
            time.sleep(0.002)
            state = agent.agent.check_xfer_state(h)
    except ERRS:
        state = "ERR"
    return state, time.monotonic() - t_post


def finish_all(agent, posted, limit):
    """Polls every (handle, state, t_post) of `posted` together to DONE or an error; returns
    [(outcome, seconds since its post)] in the same order. Together, so that one request's wait
    does not add to the next one's measured time."""
    out: list = [None] * len(posted)
    states = [st for _, st, _ in posted]
    while any(o is None for o in out):
        for i, (h, _, t_post) in enumerate(posted):
            if out[i] is not None:
                continue
            try:
                states[i] = agent.agent.check_xfer_state(h)
            except ERRS:
                states[i] = "ERR"
            elapsed = time.monotonic() - t_post
            if states[i] in ("DONE", "ERR"):
                out[i] = (states[i], elapsed)
            elif elapsed > limit:
                out[i] = ("STUCK", elapsed)
        time.sleep(0.002)
    return out


def create_backend_timed(timeout_ms):
    # create_backend once more (against a dead engine it must be refused in bounded time):
    # ("created" or "refused", seconds it took).
    t = time.monotonic()
    try:
        daoskit.DaosAgent(params={"timeout_ms": timeout_ms})
        outcome = "created"
    except ERRS:
        outcome = "refused"
    return outcome, time.monotonic() - t
