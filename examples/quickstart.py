# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The README's quick start, whole: one 1 MiB block written to a DAOS key through NIXL, read back
into another buffer, compared, and its size asked with queryMem. Pool and container from
DAOS_POOL and DAOS_CONT (daos-sim: any names; the container is created when missing)."""

import os

import numpy as np

try:
    from nixl_cu12._api import nixl_agent, nixl_agent_config
except ImportError:
    from nixl_cu13._api import nixl_agent, nixl_agent_config

nbytes = 1 << 20
block = np.random.default_rng(42).integers(0, 256, nbytes, dtype=np.uint8)
back = np.zeros(nbytes, dtype=np.uint8)

agent = nixl_agent("quickstart", nixl_agent_config(backends=[]))
agent.create_backend("DAOS", {"create_container": "true"})
agent.register_memory([(block.ctypes.data, nbytes, 0, ""), (back.ctypes.data, nbytes, 0, "")], "DRAM")
agent.register_memory([(0, nbytes, 0, "block-42")], "OBJ", backends=["DAOS"])

for op, buf in (("WRITE", block), ("READ", back)):
    h = agent.initialize_xfer(
        op,
        agent.get_xfer_descs([(buf.ctypes.data, nbytes, 0)], "DRAM"),
        agent.get_xfer_descs([(0, nbytes, 0)], "OBJ"),
        agent.name,
        backends=["DAOS"],
    )
    state = agent.transfer(h)
    while state == "PROC":
        state = agent.check_xfer_state(h)
    agent.release_xfer_handle(h)
    print(f"{op}: {state}")
    assert state == "DONE", state

assert (block == back).all(), "the block read back differs"
size = agent.query_memory([(0, 0, 0, "block-42")], "DAOS", mem_type="OBJ")
where = f"pool {os.environ.get('DAOS_POOL')!r}, container {os.environ.get('DAOS_CONT')!r}"
print(f"read back equal; queryMem: {size} ({where})")
