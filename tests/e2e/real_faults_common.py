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
