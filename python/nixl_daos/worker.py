# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The NIXL side of `nixl-daos doctor`, run in a subprocess of its own per check: NIXL's plugin
manager reads its environment once per process, a plugin that crashes takes only the worker
down, and the plugin's log lines (stderr) are the doctor's to quote.

    python -m nixl_daos.worker PACKAGE list
    python -m nixl_daos.worker PACKAGE create PARAMS_JSON
    python -m nixl_daos.worker PACKAGE io PARAMS_JSON PLUGIN_PATH
    python -m nixl_daos.worker - daos_init LIBDAOS_PATH
    python -m nixl_daos.worker - dlopen PLUGIN_PATH

Prints one JSON object on its last stdout line."""

import ctypes
import importlib
import json
import os
import socket
import sys
import time

TEST_BYTES = 1 << 16


def agent(package: str):
    api = importlib.import_module(f"{package}._api")
    return api, api.nixl_agent(f"nixl-daos-doctor-{os.getpid()}", api.nixl_agent_config(backends=[]))


def cmd_list(package: str) -> dict:
    _, a = agent(package)
    plugins = sorted(a.get_plugin_list())
    out = {"plugins": plugins}
    if "DAOS" in plugins:
        # The bindings' own call, which raises when the plugin does not load (get_plugin_params
        # logs that and answers an empty list).
        try:
            params, mems = a.agent.getPluginParams("DAOS")
            out["params"] = sorted(params)
        except Exception as e:
            out["load_error"] = f"{type(e).__name__}: {e}"
    return out


def cmd_create(package: str, params: dict) -> dict:
    _, a = agent(package)
    try:
        a.create_backend("DAOS", params)
    except Exception as e:  # NIXL raises its own nixlBackendError; the plugin logged why
        return {"created": False, "error": f"{type(e).__name__}: {e}"}
    return {"created": True, "mem_types": sorted(a.get_backend_mem_types("DAOS"))}


class NdStr(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_char_p), ("len", ctypes.c_size_t)]


class NdKey(ctypes.Structure):
    _fields_ = [("meta", NdStr), ("dev_id", ctypes.c_uint64)]


class NdParam(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


def remove_key(plugin: str, params: dict, key: bytes) -> str | None:
    """Removes the test key through the plugin's own C entry points (NIXL has no call for it);
    the plugin is the one NIXL loaded (same path, so the same library). None, or what failed."""
    lib = ctypes.CDLL(plugin)
    if not hasattr(lib, "nd_remove_keys"):
        return f"{plugin} is an older nixl-daos without nd_remove_keys (`nixl-daos install` updates it)"
    arr = (NdParam * len(params))(*[NdParam(k.encode(), v.encode()) for k, v in params.items()])
    engine = ctypes.c_void_p()
    rc = lib.nd_engine_create(arr, len(params), ctypes.byref(engine))
    if rc != 0:
        return f"nd_engine_create returned {rc}"
    try:
        k = NdKey(NdStr(key, len(key)), 0)
        rc = lib.nd_remove_keys(engine, ctypes.byref(k), 1)
        return None if rc == 0 else f"nd_remove_keys returned {rc}"
    finally:
        lib.nd_engine_destroy(engine)


def cmd_io(package: str, params: dict, plugin: str) -> dict:
    _, a = agent(package)
    a.create_backend("DAOS", params)
    key = f"nixl-daos-doctor.{socket.gethostname()}.{os.getpid()}.{time.time_ns()}"
    out = {"key": key}
    try:
        write_read_query(a, key, out)
    except Exception as e:  # reported beside what the removal found, not lost with it
        out["error"] = f"{type(e).__name__}: {e}"
    # Whatever happened once the write could have been posted: the key may exist. evict=false
    # whatever the user gave: the removing engine lives for one call.
    try:
        out["remove_error"] = remove_key(plugin, dict(params, evict="false"), key.encode())
        out["size_after_remove"] = query_size(a, key)
    except Exception as e:
        out["remove_error"] = f"{type(e).__name__}: {e}"
    return out


def write_read_query(a, key: str, out: dict) -> None:
    """Writes TEST_BYTES of random bytes to the key, reads them back and asks the key's size;
    each step's outcome goes into `out`."""
    data = (ctypes.c_uint8 * TEST_BYTES).from_buffer_copy(os.urandom(TEST_BYTES))
    back = (ctypes.c_uint8 * TEST_BYTES)()
    addr = {id(data): ctypes.addressof(data), id(back): ctypes.addressof(back)}
    a.register_memory([(addr[id(data)], TEST_BYTES, 0, ""), (addr[id(back)], TEST_BYTES, 0, "")], "DRAM")
    a.register_memory([(0, TEST_BYTES, 0, key)], "OBJ", backends=["DAOS"])
    for op, buf in (("WRITE", data), ("READ", back)):
        h = a.initialize_xfer(
            op,
            a.get_xfer_descs([(addr[id(buf)], TEST_BYTES, 0)], "DRAM"),
            a.get_xfer_descs([(0, TEST_BYTES, 0)], "OBJ"),
            a.name,
            backends=["DAOS"],
        )
        state = a.transfer(h)
        deadline = time.monotonic() + 60
        while state == "PROC" and time.monotonic() < deadline:
            state = a.check_xfer_state(h)
        a.release_xfer_handle(h)
        out[op.lower()] = state
        if state != "DONE":
            return
    out["same"] = bytes(data) == bytes(back)
    out["size"] = query_size(a, key)


def query_size(a, key: str) -> str | None:
    got = a.query_memory([(0, 0, 0, key)], "DAOS", mem_type="OBJ")
    return got[0].get("size") if got and got[0] else None


def cmd_daos_init(path: str) -> dict:
    """daos_init of that libdaos: it asks daos_agent for the system's attach information, so it
    fails when no agent answers."""
    lib = ctypes.CDLL(path)
    rc = lib.daos_init()
    out = {"rc": rc}
    if rc != 0:
        lib.d_errstr.restype = ctypes.c_char_p
        out["error"] = (lib.d_errstr(rc) or b"").decode(errors="replace")
    else:
        lib.daos_fini()
    return out


def cmd_dlopen(path: str) -> dict:
    """What the loader says of the plugin file (NIXL logs its dlopen error only at INFO)."""
    try:
        ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        return {"error": str(e)}
    return {"error": None}


def main() -> None:
    package, cmd, *rest = sys.argv[1:]
    if cmd == "list":
        out = cmd_list(package)
    elif cmd == "create":
        out = cmd_create(package, json.loads(rest[0]))
    elif cmd == "dlopen":
        out = cmd_dlopen(rest[0])
    elif cmd == "daos_init":
        out = cmd_daos_init(rest[0])
    elif cmd == "io":
        out = cmd_io(package, json.loads(rest[0]), rest[1])
    else:
        raise SystemExit(f"unknown worker command {cmd!r}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
