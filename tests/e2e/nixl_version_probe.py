# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Run by test_nixl_versions.py in a subprocess whose PYTHONPATH puts another nixl-cu12 wheel
first: loads the plugin from argv[1] into that NIXL, writes and reads back one key on daos-sim,
and prints one JSON line: the plugins NIXL listed and what happened."""

import json
import os
import sys
import tempfile

import numpy as np

plugin_dir = tempfile.mkdtemp(prefix="nixl-daos-version-")
os.symlink(sys.argv[1], os.path.join(plugin_dir, "libplugin_DAOS.so"))
os.environ["NIXL_PLUGIN_DIR"] = plugin_dir

import nixl_cu12  # noqa: E402
from nixl_cu12._api import nixl_agent, nixl_agent_config  # noqa: E402

out = {"nixl": os.path.dirname(nixl_cu12.__file__)}
try:
    agent = nixl_agent("version-probe", nixl_agent_config(backends=[]))
    out["plugins"] = agent.get_plugin_list()
    agent.create_backend("DAOS", {"pool": "sim", "container": "versions", "create_container": "true"})
    data = np.arange(1 << 16, dtype=np.uint8)
    back = np.zeros_like(data)
    agent.register_memory([(data.ctypes.data, data.nbytes, 0, ""), (back.ctypes.data, back.nbytes, 0, "")], "DRAM")
    agent.register_memory([(0, data.nbytes, 0, "version-key")], "OBJ")
    for op, buf in (("WRITE", data), ("READ", back)):
        local = agent.get_xfer_descs([(buf.ctypes.data, buf.nbytes, 0)], "DRAM")
        remote = agent.get_xfer_descs([(0, buf.nbytes, 0)], "OBJ")
        handle = agent.initialize_xfer(op, local, remote, agent.name)
        state = agent.transfer(handle)
        while state == "PROC":
            state = agent.check_xfer_state(handle)
        agent.release_xfer_handle(handle)
        out[op] = state
    out["same"] = bool((data == back).all())
except Exception as e:  # the JSON line says what failed; the test decides whether that is right
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out), flush=True)
