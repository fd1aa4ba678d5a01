#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Drive libplugin_DAOS.so through the real NIXL agent (nixl-cu12 wheel) and check what the shim
translates: discovery, plugin params and memory types, create_backend (and its failure path),
DRAM/OBJ registration, WRITE/READ loopback (initialize_xfer and prepped), query_memory, a read of
a missing object, deregistration.

    .venv/bin/python tests/shim/check_nixl.py <path/to/libplugin_DAOS.so> \
        [--param k=v ...] [--fail-param k=v ...]

--param: backend parameters for create_backend; --fail-param: parameters that must make
create_backend fail (the initErr path). For the real plugin set NIXL_DAOS_LIBDAOS (e.g.
target/release/libdaos_sim.so). Exits non-zero on the first failed check.
"""

import argparse
import os
import sys
import tempfile


def parse_params(items):
    return dict(item.split("=", 1) for item in items)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plugin")
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--fail-param", action="append", default=[])
    args = ap.parse_args()

    plugin_dir = tempfile.mkdtemp(prefix="nixl-daos-shim-")
    os.symlink(os.path.abspath(args.plugin), os.path.join(plugin_dir, "libplugin_DAOS.so"))
    os.environ["NIXL_PLUGIN_DIR"] = plugin_dir  # before the first agent: the manager is a singleton

    import numpy as np
    from nixl_cu12._api import nixl_agent, nixl_agent_config
    from nixl_cu12._bindings import nixlBackendError

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            sys.exit(1)

    def run(agent, handle):
        state = agent.transfer(handle)
        while state == "PROC":
            state = agent.check_xfer_state(handle)
        return state

    agent = nixl_agent("shimcheck", nixl_agent_config(backends=[]))
    check("DAOS" in agent.get_plugin_list(), f"listed: {agent.get_plugin_list()}")
    params = agent.get_plugin_params("DAOS")
    check(isinstance(params, dict) and len(params) > 0, f"plugin params: {params}")
    mems = agent.get_plugin_mem_types("DAOS")
    check(sorted(mems) == ["DRAM_SEG", "OBJ_SEG"], f"plugin mem types: {mems}")

    if args.fail_param:
        try:
            agent.create_backend("DAOS", parse_params(args.fail_param))
            check(False, "create_backend with bad params raises")
        except nixlBackendError:
            check(True, "create_backend with bad params raises nixlBackendError")

    agent.create_backend("DAOS", parse_params(args.param))
    check(True, "create_backend")
    check(sorted(agent.get_backend_mem_types("DAOS")) == ["DRAM_SEG", "OBJ_SEG"], "backend mem types")

    n = 1 << 16
    src = np.arange(n, dtype=np.uint8) * 7
    dst = np.zeros(2 * n, dtype=np.uint8)
    dram = agent.register_memory(
        [(src.ctypes.data, n, 0, ""), (dst.ctypes.data, 2 * n, 0, "")], "DRAM", backends=["DAOS"]
    )
    key = f"shim-key-{os.getpid()}"
    devid_key = 900000 + os.getpid()  # empty metaInfo: the key is the decimal devId
    missing = f"shim-missing-{os.getpid()}"
    objs = agent.register_memory(
        [(0, 2 * n, 1, key), (0, n, devid_key, ""), (0, n, 3, missing)], "OBJ", backends=["DAOS"]
    )
    check(True, "register DRAM and OBJ")

    # WRITE src to key at offsets 0 and n (two descriptors), and to the devId key; READ back.
    local = agent.get_xfer_descs([(src.ctypes.data, n, 0), (src.ctypes.data, n, 0), (src.ctypes.data, n, 0)], "DRAM")
    remote = agent.get_xfer_descs([(0, n, 1), (n, n, 1), (0, n, devid_key)], "OBJ")
    h = agent.initialize_xfer("WRITE", local, remote, agent.name)
    check(agent.query_xfer_backend(h) == "DAOS", "transfer goes to DAOS")
    check(run(agent, h) == "DONE", "WRITE done")
    agent.release_xfer_handle(h)

    local = agent.get_xfer_descs([(dst.ctypes.data, 2 * n, 0)], "DRAM")
    remote = agent.get_xfer_descs([(0, 2 * n, 1)], "OBJ")
    h = agent.initialize_xfer("READ", local, remote, agent.name)
    check(run(agent, h) == "DONE", "READ done")
    agent.release_xfer_handle(h)
    check(np.array_equal(dst[:n], src) and np.array_equal(dst[n:], src), "READ data matches")

    # Prepped variant, from the devId key.
    dst[:] = 0
    lh = agent.prep_xfer_dlist("", [(dst.ctypes.data, n, 0)], "DRAM")
    rh = agent.prep_xfer_dlist(agent.name, [(0, n, devid_key)], "OBJ")
    h = agent.make_prepped_xfer("READ", lh, [0], rh, [0])
    check(run(agent, h) == "DONE", "prepped READ done")
    agent.release_xfer_handle(h)
    agent.release_dlist_handle(lh)
    agent.release_dlist_handle(rh)
    check(np.array_equal(dst[:n], src), "prepped READ data matches (devId key)")

    resp = agent.query_memory([(0, 0, 0, key), (0, 0, 0, missing), (0, 0, devid_key, "")], "DAOS", mem_type="OBJ")
    check(resp[0] == {"size": str(2 * n)} and resp[1] is None and resp[2] == {"size": str(n)}, f"query_memory: {resp}")

    local = agent.get_xfer_descs([(dst.ctypes.data, n, 0)], "DRAM")
    remote = agent.get_xfer_descs([(0, n, 3)], "OBJ")
    h = agent.initialize_xfer("READ", local, remote, agent.name)
    try:
        state = run(agent, h)
        check(False, f"READ of a missing object fails (got {state})")
    except nixlBackendError:
        check(True, "READ of a missing object raises nixlBackendError")
    agent.release_xfer_handle(h)

    agent.deregister_memory(objs, backends=["DAOS"])
    agent.deregister_memory(dram, backends=["DAOS"])
    check(True, "deregister")
    del agent
    print("all checks passed")


if __name__ == "__main__":
    main()
