"""The drop-in path the README gives for consumers that hard-code backend names (KVBM asks for
"OBJ", LMCache checks an allow-list): the plugin installed as libplugin_OBJ.so answers to "OBJ"
and takes S3-style parameters it does not know. In a subprocess, because NIXL's plugin manager
reads NIXL_PLUGIN_DIR once per process."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import daoskit

HERE = Path(__file__).resolve().parent

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
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
        h = a.initialize_xfer(op, a.get_xfer_descs([(buf.ctypes.data, buf.nbytes, 0)], "DRAM"),
                              a.get_xfer_descs([(0, buf.nbytes, 4242)], "OBJ"), a.name)
        backend = a.query_xfer_backend(h)
        st = a.transfer(h)
        while st != "DONE":
            st = a.check_xfer_state(h)
        a.release_xfer_handle(h)
    print(json.dumps({"plugins": plugins, "backend": backend,
                      "same": bool((data == back).all()),
                      "query": a.query_memory([(0, 0, 0, "4242")], "OBJ", mem_type="OBJ")}))
    """
)


def test_installed_as_obj_it_serves_obj_consumers(nixl_env):
    plugin_dir = tempfile.mkdtemp(prefix="nixl-daos-as-obj-")
    os.symlink(daoskit.PLUGIN_SO, os.path.join(plugin_dir, "libplugin_OBJ.so"))
    env = dict(os.environ, NIXL_PLUGIN_DIR=plugin_dir, NIXL_LOG_LEVEL="INFO")
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(HERE)], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["plugins"] == ["OBJ"] and out["backend"] == "OBJ", out
    assert out["same"], "data written and read back through the name OBJ differ"
    assert out["query"] == [{"size": str(1 << 16)}], out
    assert 'container "kvbm-dropin" from the S3 parameter bucket' in p.stderr, p.stderr[-2000:]
    assert "creating container" in p.stderr and "kvbm-dropin" in p.stderr, p.stderr[-2000:]
    assert p.stderr.count('unknown parameters "endpoint_override", "region"') == 1, p.stderr[-2000:]
