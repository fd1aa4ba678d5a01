# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""`nixl-daos doctor`: checks a deployment as a NIXL process of this environment would meet it,
and says for each failure what to fix. Exit status: 0 when nothing failed (warnings allowed),
1 when a check failed."""

import ctypes
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nixl_daos import PLUGIN, nixlenv
from nixl_daos.worker import TEST_BYTES

SUPPORTED_DAOS = (2, 8)
WORKER_TIMEOUT_S = 120


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    failed: int = 0
    warned: int = 0

    def ok(self, what: str, detail: str) -> None:
        self.lines.append(f"ok    {what}: {detail}")

    def warn(self, what: str, detail: str, fix: str) -> None:
        self.warned += 1
        self.lines.append(f"warn  {what}: {detail}\n      fix: {fix}")

    def fail(self, what: str, detail: str, fix: str) -> None:
        self.failed += 1
        self.lines.append(f"FAIL  {what}: {detail}\n      fix: {fix}")

    def skip(self, what: str, why: str) -> None:
        self.lines.append(f"skip  {what}: {why}")


def worker(*args: str) -> tuple[dict | None, str]:
    """Runs nixl_daos.worker in a subprocess; its JSON answer (None if it died or exited with a
    failure) and its stderr."""
    # -P (3.11+): the current directory is not put first on the path, where a directory named
    # like a package (nixl_cu12/, nixl_daos/) would shadow the installed one.
    # The package it runs from goes first instead (an installed one, or a source tree's).
    flags = ["-P"] if sys.version_info >= (3, 11) else []
    here = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    try:
        p = subprocess.run(
            [sys.executable, *flags, "-m", "nixl_daos.worker", *args],
            capture_output=True,
            text=True,
            timeout=WORKER_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, f"{err[-2000:]}\nno answer in {WORKER_TIMEOUT_S} s"
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0:
        said = f" after answering {lines[-1][:300]}" if lines else ""
        return None, f"{p.stderr}\nthe check's process exited with status {p.returncode}{said}"
    try:
        return (json.loads(lines[-1]) if lines else None), p.stderr
    except json.JSONDecodeError:
        return None, p.stderr


def plugin_said(stderr: str, most: int = 3) -> str:
    """The plugin's and NIXL's error lines of a worker, the last few, for the report."""
    picked = [
        ln.strip()
        for ln in stderr.splitlines()
        if " ERROR " in ln or re.match(r"E\d{4} ", ln) or ln.startswith(("the check's process", "no answer in"))
    ]
    if not picked:
        picked = [ln.strip() for ln in stderr.splitlines() if ln.strip()][-most:]
    return "\n      | ".join([""] + picked[-most:]) if picked else ""


def libdaos_path(params: dict) -> str:
    return params.get("daos_lib") or os.environ.get("NIXL_DAOS_LIBDAOS") or "libdaos.so.2"


def check_libdaos(r: Report, params: dict) -> str | None:
    path = libdaos_path(params)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        r.fail(
            "libdaos",
            f"cannot load {path}: {e}",
            "install the DAOS 2.8 client (daos-client) so libdaos.so.2 is on the loader's path, or point "
            "NIXL_DAOS_LIBDAOS (or the daos_lib parameter) at it",
        )
        return None
    try:
        get = lib.daos_version_get
    except AttributeError:
        r.fail(
            "libdaos",
            f"{path} has no daos_version_get: DAOS 2.6.0 or older, or not libdaos",
            "install the DAOS 2.8 client",
        )
        return None
    major, minor, fix = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    get(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(fix))
    version = f"{major.value}.{minor.value}.{fix.value}"
    daos26 = (major.value, minor.value) == (2, 7)
    if daos26:
        version += " (as DAOS 2.6.1 to 2.6.5 report)"
    if (major.value, minor.value) == SUPPORTED_DAOS:
        r.ok("libdaos", f"{path}, DAOS client API {version} (supported)")
    elif os.environ.get("NIXL_DAOS_ALLOW_UNTESTED_DAOS") == "1":
        r.warn(
            "libdaos",
            f"{path} is DAOS client API {version}; this build is made for 2.8 and uses it only because "
            "NIXL_DAOS_ALLOW_UNTESTED_DAOS=1",
            "install the DAOS 2.8 client"
            + (
                "; until then create containers with `daos cont create`, not create_container=true (DAOS 2.6's "
                "asynchronous container create can read freed memory when it is retried)"
                if daos26
                else ""
            ),
        )
    else:
        r.fail(
            "libdaos",
            f"{path} is DAOS client API {version}; this build supports 2.8 and refuses it",
            "install the DAOS 2.8 client, or set NIXL_DAOS_ALLOW_UNTESTED_DAOS=1 to try it anyway",
        )
        return None
    return path


def agent_socket() -> Path:
    return Path(os.environ.get("DAOS_AGENT_DRPC_DIR", "/var/run/daos_agent")) / "daos_agent.sock"


def check_agent(r: Report, libdaos: str) -> bool:
    out, err = worker("-", "daos_init", libdaos)
    if out and out.get("rc") == 0:
        r.ok("daos_agent", f"daos_init of {libdaos} succeeded")
        return True
    sock = agent_socket()
    where = f"its socket {sock} {'exists but did not answer' if sock.exists() else 'does not exist'}"
    said = f"daos_init returned {out['rc']} ({out.get('error', '')})" if out else "daos_init did not return"
    r.fail(
        "daos_agent",
        f"{said}; {where}{plugin_said(err)}",
        "start daos_agent on this host (systemctl start daos_agent), or set DAOS_AGENT_DRPC_DIR to the "
        "runtime_dir of the agent's daos_agent.yml",
    )
    return False


def process_config(name: str, default: str) -> tuple[Path, Path] | None:
    """The configuration file a running daos_agent/daos_server of this host was given (-o FILE,
    -oFILE, --config-path FILE or =FILE; relative to its working directory, inside its root),
    else the default path when it exists."""
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() != name:
                continue
            argv = [a.decode(errors="replace") for a in (comm.parent / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        given = None
        for i, a in enumerate(argv):
            if a in ("-o", "--config", "--config-path") and i + 1 < len(argv):
                given = argv[i + 1]
            elif a.startswith(("--config=", "--config-path=")):
                given = a.split("=", 1)[1]
            elif a.startswith("-o") and len(a) > 2:
                given = a[2:].removeprefix("=")
        if given:
            # Seen through the process's own root and working directory (/proc/PID/root and
            # cwd resolve in its mount namespace, a container's included); where this user may
            # not look there, the path as given (relative: unknown).
            proc = comm.parent
            seen = proc / "root" / given.lstrip("/") if given.startswith("/") else proc / "cwd" / given
            try:
                seen.stat()
                return Path(given), seen
            except OSError:
                return (Path(given), Path(given)) if given.startswith("/") else None
    return (Path(default), Path(default)) if Path(default).exists() else None


def read_config(name: str, default: str) -> tuple[Path | None, str | None]:
    """process_config's file, as its process names it, and its text (None where there is none or
    it cannot be read)."""
    found = process_config(name, default)
    if found is None:
        return None, None
    shown, readable = found
    try:
        return shown, readable.read_text()
    except OSError:
        return shown, None


def without_comments(text: str) -> str:
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def yaml_value(text: str, key: str) -> str | None:
    text = without_comments(text)
    m = re.search(rf"^\s*{re.escape(key)}\s*:\s*([^#\n]*)", text, re.M)
    return m.group(1).strip().strip("'\"") if m else None


def check_settings(r: Report) -> None:
    """The recommended settings (docs/operations.md, checklist) that can be seen from here."""
    for var, why in (
        ("CRT_TIMEOUT", "the plugin sets 5 s for its process; a larger one lengthens every failover"),
        ("D_LOG_FILE", "the plugin gives libdaos a log file only this user can write"),
    ):
        if os.environ.get(var):
            r.warn("settings", f"{var}={os.environ[var]} is set in this environment ({why})", f"unset {var}")
    agent_cfg, text = read_config("daos_agent", "/etc/daos/daos_agent.yml")
    if text is None:
        r.skip("settings", "no daos_agent.yml readable here: cache_expiration not checked")
    elif yaml_value(text, "cache_expiration") != "1":
        r.warn(
            "settings",
            f"{agent_cfg}: cache_expiration is {yaml_value(text, 'cache_expiration') or 'not set'}; new processes "
            "may be handed a dead engine's address for minutes",
            f"set `cache_expiration: 1` in {agent_cfg} and restart daos_agent",
        )
    else:
        r.ok("settings", f"{agent_cfg}: cache_expiration: 1")
    server_cfg, text = read_config("daos_server", "/etc/daos/daos_server.yml")
    if text is None:
        return  # a client host: the servers' settings are not visible from here
    missing = [s for s in ("SWIM_SUSPECT_TIMEOUT=5000", "CRT_EVENT_DELAY=2") if s not in without_comments(text)]
    crt = yaml_value(text, "crt_timeout")
    if crt is None or not crt.isdigit() or int(crt) > 10:
        missing.append("crt_timeout: 10")
    if missing:
        r.warn(
            "settings",
            f"{server_cfg}: {', '.join(missing)} not in effect; a dead engine then takes 30-70 s to leave the pool map",
            f"in {server_cfg}, under each engine's env_vars: SWIM_SUSPECT_TIMEOUT=5000 and CRT_EVENT_DELAY=2, "
            "and crt_timeout: 10; restart the engines",
        )
    else:
        r.ok("settings", f"{server_cfg}: the recommended failure-detection settings are in effect")


def check_nixl(r: Report, package: str | None) -> nixlenv.Nixl | None:
    found = nixlenv.find_nixl()
    if package:
        found = [n for n in found if n.package == package]
    if not found:
        r.fail(
            "NIXL",
            f"no NIXL wheel ({', '.join(d for d, _ in nixlenv.DISTRIBUTIONS)}) in {sys.prefix}",
            "pip install nixl-cu12==1.5.1 (or nixl-cu13) into this environment, or run nixl-daos with the python of "
            "the environment your consumer runs in",
        )
        return None
    nixl = found[0]
    more = f" (also installed: {', '.join(n.dist for n in found[1:])}; a consumer uses the one it imports)"
    r.ok("NIXL", f"{nixl.dist} {nixl.version} at {nixl.libs}{more if len(found) > 1 else ''}")
    return nixl


def check_plugin_file(r: Report, nixl: nixlenv.Nixl) -> bool:
    if os.environ.get("NIXL_PLUGIN_DIR"):
        r.warn(
            "plugin directory",
            f"NIXL_PLUGIN_DIR={os.environ['NIXL_PLUGIN_DIR']} replaces NIXL's own {nixl.default_plugin_dir}: "
            "UCX, POSIX and NIXL's other plugins are not loaded in such a process",
            "unset NIXL_PLUGIN_DIR (the plugin is installed in NIXL's own directory)",
        )
    path = nixlenv.plugin_file(nixl.plugin_dir, "DAOS")
    if not path.exists():
        r.fail(
            "DAOS plugin",
            f"NIXL finds no libplugin_DAOS.so in {nixl.plugin_dir}",
            "pip install nixl-daos into this environment (or `nixl-daos install`, which copies this package's "
            "plugin there)",
        )
        return False
    if not nixlenv.is_ours(path):
        r.fail(
            "DAOS plugin",
            f"{path} is another plugin named DAOS (NIXL's libdfs DAOS backend?), not nixl-daos: NIXL loads that "
            "one for the name DAOS",
            "keep it and install this one under another name: `nixl-daos install --as DAOS_OBJ` (then ask NIXL for "
            "DAOS_OBJ), or replace it: `nixl-daos install --replace`",
        )
        return False
    same = PLUGIN.exists() and path.read_bytes() == PLUGIN.read_bytes()
    if PLUGIN.exists() and not same:
        r.warn(
            "DAOS plugin",
            f"{path} is nixl-daos but not the build this package ships ({PLUGIN})",
            "`nixl-daos install` puts this package's build there",
        )
    else:
        r.ok("DAOS plugin", f"{path} is nixl-daos")
    return True


def check_listed(r: Report, nixl: nixlenv.Nixl) -> bool:
    out, err = worker(nixl.package, "list")
    if out is None:
        r.fail(
            "NIXL loads it",
            f"the check's process died while NIXL started and loaded its plugins{plugin_said(err)}",
            "see the lines above: a plugin file that is damaged, or made for another system, can do this",
        )
        return False
    plugins = out["plugins"]
    if "DAOS" not in plugins or "pool" not in out.get("params", []):
        why = f" ({out['load_error']})" if out.get("load_error") else ""
        if "DAOS" in plugins:
            loader, _ = worker("-", "dlopen", str(nixlenv.plugin_file(nixl.plugin_dir, "DAOS")))
            if loader is None:
                why += "; loading the file alone crashed the process (a damaged file?)"
            elif loader["error"]:
                why += f"; the loader says: {loader['error']}"
        r.fail(
            "NIXL loads it",
            f"NIXL lists {', '.join(plugins) or 'no plugins'} but does not load DAOS{why}{plugin_said(err)}",
            "a library the loader cannot find or a symbol version it lacks: a host older than glibc 2.28 or GCC 8's "
            "libstdc++; a NIXL outside the tested range is refused (install nixl-cu12==1.5.1, or set "
            "NIXL_DAOS_ALLOW_UNTESTED_NIXL=1 to try it)",
        )
        return False
    others = [p for p in ("UCX", "POSIX") if p not in plugins]
    if others:
        r.warn(
            "NIXL loads it",
            f"DAOS is listed but {', '.join(others)} not (NIXL lists {', '.join(plugins)})",
            "unset NIXL_PLUGIN_DIR; reinstall NIXL if its own plugins are missing",
        )
    else:
        r.ok("NIXL loads it", f"NIXL lists DAOS beside {', '.join(p for p in plugins if p != 'DAOS')}")
    return True


def check_container(r: Report, nixl: nixlenv.Nixl, params: dict) -> bool:
    out, err = worker(nixl.package, "create", json.dumps(params))
    target = f"pool {params.get('pool') or os.environ.get('DAOS_POOL')!r}, container " + repr(
        params.get("container") or os.environ.get("DAOS_CONT")
    )
    if out and out.get("created"):
        r.ok("pool and container", f"{target}: the backend was created (memory types {', '.join(out['mem_types'])})")
        return True
    r.fail(
        "pool and container",
        f"{target}: create_backend failed{plugin_said(err)}",
        "the plugin's message above names the fix (a wrong label, missing rights: `daos cont update-acl`, "
        "a container to create: create_container=true)",
    )
    return False


def check_io(r: Report, nixl: nixlenv.Nixl, params: dict, plugin: Path) -> None:
    out, err = worker(nixl.package, "io", json.dumps(params), str(plugin))
    if not out:
        r.fail("I/O", f"the test did not finish{plugin_said(err)}", "see the lines above")
        return
    size = str(TEST_BYTES)
    if out.get("write") != "DONE" or out.get("read") != "DONE" or not out.get("same"):
        r.fail("I/O", f"test key {out['key']}: {out}{plugin_said(err)}", "see the plugin's lines above")
    elif out.get("size") != size:
        r.fail("I/O", f"queryMem of the test key answered {out.get('size')}, not {size}", "report this as a bug")
    elif out.get("remove_error") or out.get("size_after_remove") is not None:
        r.fail(
            "I/O",
            f"the test key {out['key']} was not removed ({out.get('remove_error') or 'still present'})",
            "remove it by hand when it matters; see the plugin's lines above" + plugin_said(err),
        )
    else:
        r.ok("I/O", f"{size} bytes written, read back equal, queryMem {size}, the test key removed")


def run(args) -> int:
    r = Report()

    def step(fn, *a):
        before = len(r.lines)
        got = fn(r, *a)
        for line in r.lines[before:]:
            print(line, flush=True)
        return got

    params = dict(p.split("=", 1) for p in args.param)
    # The doctor's engines live for a moment: none of them evicts anyone's keys.
    params.setdefault("evict", "false")
    if args.pool:
        params["pool"] = args.pool
    if args.container:
        params["container"] = args.container
    nixl = step(check_nixl, args.nixl)
    plugin_ok = bool(nixl) and step(check_plugin_file, nixl)
    listed = plugin_ok and step(check_listed, nixl)
    libdaos = step(check_libdaos, params)
    agent_ok = bool(libdaos) and step(check_agent, libdaos)
    if not (params.get("pool") or os.environ.get("DAOS_POOL")):
        step(lambda rr: rr.skip("pool and container", "no pool given (--pool, or DAOS_POOL)"))
    elif listed and agent_ok:
        if step(check_container, nixl, params) and args.io:
            step(check_io, nixl, params, nixlenv.plugin_file(nixl.plugin_dir, "DAOS"))
    else:
        step(lambda rr: rr.skip("pool and container", "not tried: a check above failed"))
    step(check_settings)
    verdict = "healthy" if not r.failed else f"{r.failed} check{'s' if r.failed > 1 else ''} failed"
    print(f"nixl-daos doctor: {verdict}{f', {r.warned} warning(s)' if r.warned else ''}")
    return 1 if r.failed else 0
