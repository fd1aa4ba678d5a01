# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Consumer of tests/e2e/test_dropin.py: the plugin installed as libplugin_OBJ.so (NIXL_PLUGIN_DIR
from the test) serves an OBJ write and read-back with S3-style parameters; prints one JSON line."""

import json

import numpy as np
from nixl_cu12._api import nixl_agent, nixl_agent_config

a = nixl_agent("dropin", nixl_agent_config(backends=[]))
plugins = a.get_plugin_list()
# KVBM / vLLM's object tier pass only S3 parameters: the bucket becomes the container.
a.create_backend("OBJ", {"bucket": "kvbm-dropin", "endpoint_override": "http://unused", "region": "r"})
data = np.arange(1 << 16, dtype=np.uint8)
back = np.zeros_like(data)
a.register_memory([(data.ctypes.data, data.nbytes, 0, ""), (back.ctypes.data, back.nbytes, 0, "")], "DRAM")
a.register_memory([(0, data.nbytes, 4242, "")], "OBJ")  # KVBM: key = decimal devId
for op, buf in (("WRITE", data), ("READ", back)):
    h = a.initialize_xfer(
        op,
        a.get_xfer_descs([(buf.ctypes.data, buf.nbytes, 0)], "DRAM"),
        a.get_xfer_descs([(0, buf.nbytes, 4242)], "OBJ"),
        a.name,
    )
    backend = a.query_xfer_backend(h)
    st = a.transfer(h)
    while st != "DONE":
        st = a.check_xfer_state(h)
    a.release_xfer_handle(h)
print(
    json.dumps(
        {
            "plugins": plugins,
            "backend": backend,
            "same": bool((data == back).all()),
            "query": a.query_memory([(0, 0, 0, "4242")], "OBJ", mem_type="OBJ"),
        }
    )
)
