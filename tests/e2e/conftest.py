# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the end-to-end tests: the environment NIXL and the plugin need (set before any
agent exists), daos-sim's control API, and agents with the DAOS backend that are torn down after
each test with the simulator calmed first, so that one test's faults cannot leak into the next."""

import pytest

import daoskit  # importable through pytest's pythonpath (pyproject.toml)


@pytest.fixture(scope="session", autouse=True)
def nixl_env():
    """NIXL_PLUGIN_DIR, NIXL_DAOS_LIBDAOS, DAOS_POOL, DAOS_CONT: before the first nixl_agent."""
    return daoskit.prepare_environment()


@pytest.fixture(scope="session")
def sim(nixl_env):
    if daoskit.TESTBED:
        pytest.skip("needs daos-sim's controls and counters (testbed mode runs against real DAOS)")
    return daoskit.Sim()


@pytest.fixture(scope="session")
def sim_or_none(nixl_env):
    """daos-sim's controls, or None against real DAOS: for tests whose data checks hold on both
    and whose RPC counts only daos-sim can give."""
    return None if daoskit.TESTBED else daoskit.Sim()


class _NoSim:
    """Stands in for the simulator in testbed mode, where there is nothing to calm."""

    def calm(self):
        pass


@pytest.fixture(autouse=True)
def calm_sim(nixl_env):
    s = _NoSim() if daoskit.TESTBED else daoskit.Sim()
    s.calm()
    yield s
    s.calm()


@pytest.fixture
def make_agent(calm_sim):
    """make_agent(params=None, sync_mode=None) -> daoskit.DaosAgent, closed after the test."""
    made = []

    def make(params=None, **kw):
        agent = daoskit.DaosAgent(params=params, **kw)
        made.append(agent)
        return agent

    yield make
    calm_sim.calm()  # a hung simulator must not hold up the teardown
    for agent in reversed(made):
        agent.close()


@pytest.fixture
def agent(make_agent):
    return make_agent()
