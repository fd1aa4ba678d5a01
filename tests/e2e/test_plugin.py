# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The plugin as NIXL sees it before any I/O: discovery, parameters, backend creation."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nixl_cu12._api import nixl_agent, nixl_agent_config
from nixl_cu12._bindings import nixlBackendError

import daoskit
from daoskit import BACKEND, LIBDAOS, SIM_CONT, SIM_POOL, unique_key

PARAMS = [
    "pool",
    "container",
    "system",
    "daos_lib",
    "create_container",
    "oclass",
    "chunk_bytes",
    "num_queues",
    "max_inflight",
    "timeout_ms",
    "read_timeout_ms",
    "stage_bytes",
]


def bare_agent():
    return nixl_agent(unique_key("bare"), nixl_agent_config(backends=[]))


def test_plugin_listed_with_parameters_and_memory_types():
    a = bare_agent()
    assert BACKEND in a.get_plugin_list()
    params = a.get_plugin_params(BACKEND)
    assert set(PARAMS) <= set(params), sorted(params)
    # Defaults resolved against the environment the tests set.
    assert params["pool"] == SIM_POOL
    assert params["container"] == SIM_CONT
    assert params["daos_lib"] == LIBDAOS
    assert int(params["stage_bytes"]) >= 4 << 20
    # The knobs a design change made unnecessary are gone, not left as no-ops.
    assert not {"fold", "rpc_target_bytes", "spread_rpcs", "spread_min_bytes", "stage_reads"} & set(params)
    assert int(params["timeout_ms"]) > 0 and int(params["num_queues"]) >= 1
    # VRAM too: the tests load the CUDA driver stand-in (test_vram.py checks a host without one).
    assert sorted(a.get_plugin_mem_types(BACKEND)) == ["DRAM_SEG", "OBJ_SEG", "VRAM_SEG"]


def test_create_backend_with_explicit_parameters(make_agent):
    params = {
        "pool": SIM_POOL,
        "container": SIM_CONT,
        "timeout_ms": "2000",
        "num_queues": "2",
        "stage_bytes": "16777216",
    }
    d = make_agent(params)
    assert sorted(d.agent.get_backend_mem_types(BACKEND)) == ["DRAM_SEG", "OBJ_SEG", "VRAM_SEG"]
    echoed = d.agent.get_backend_params(BACKEND)
    for k, v in params.items():
        assert echoed.get(k) == v, (k, echoed)


def test_create_backend_ignores_s3_parameters(make_agent):
    # LMCache and KVBM pass S3 parameters to whatever backend they are given.
    make_agent({"bucket": "b", "endpoint_override": "http://x", "num_threads": "4"})


@pytest.mark.parametrize(
    "params",
    [
        {"pool": "no-such-pool"},
        {"container": "no-such-container"},
        {"timeout_ms": "abc"},
        {"stage_bytes": "1k"},
        {"chunk_bytes": "3000"},
        {"daos_lib": "/nonexistent/libdaos.so"},
    ],
    ids=["unknown-pool", "unknown-container", "bad-timeout", "bad-stage-bytes", "bad-chunk", "missing-libdaos"],
)
def test_create_backend_rejects_bad_parameters(params):
    a = bare_agent()
    with pytest.raises(nixlBackendError):
        a.create_backend(BACKEND, params)
    assert BACKEND not in a.backends
    # The failure leaves nothing behind: the same agent then creates a good backend.
    a.create_backend(BACKEND, {})
    assert BACKEND in a.backends


def test_create_container_creates_a_missing_container(make_agent):
    label = unique_key("cont")[:40]
    d = make_agent({"container": label, "create_container": "true"})
    assert d.query([unique_key("absent")]) == [None]


VERSION_PROBE = """
import daoskit
daoskit.prepare_environment()
daoskit.Sim().control("version 2.7.0")
from nixl_cu12._api import nixl_agent, nixl_agent_config
agent = nixl_agent("version", nixl_agent_config(backends=[]))
try:
    agent.create_backend("DAOS", {"pool": "sim", "container": "kv"})
    print("created")
except Exception as e:
    print("refused", type(e).__name__)
"""


@pytest.mark.skipif(daoskit.TESTBED, reason="needs daos-sim's version control")
@pytest.mark.parametrize("allow", [False, True])
def test_a_libdaos_of_another_release_is_refused_unless_allowed(allow):
    """A libdaos whose client API is not 2.8 (daos-sim reporting 2.7.0, as DAOS 2.6.1 to 2.6.5
    do): create_backend is refused with a line naming both releases and the override; with the
    override it is used, with a warning that says how to create containers on DAOS 2.6. In a
    fresh process: a library is checked when it is first loaded."""

    env = dict(os.environ)
    env.pop("NIXL_DAOS_ALLOW_UNTESTED_DAOS", None)
    if allow:
        env["NIXL_DAOS_ALLOW_UNTESTED_DAOS"] = "1"
    p = subprocess.run(
        [sys.executable, "-c", VERSION_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=Path(__file__).parent,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    said = p.stdout.strip().splitlines()[-1]
    assert "DAOS client API 2.7.0 (as DAOS 2.6.1 to 2.6.5 report)" in p.stderr and "DAOS 2.8" in p.stderr, p.stderr[
        -3000:
    ]
    if allow:
        assert said == "created" and "used anyway because NIXL_DAOS_ALLOW_UNTESTED_DAOS=1" in p.stderr, p.stderr[-3000:]
        assert "rather than create_container=true" in p.stderr, p.stderr[-3000:]
    else:
        assert said.startswith("refused") and "set NIXL_DAOS_ALLOW_UNTESTED_DAOS=1" in p.stderr, p.stderr[-3000:]
