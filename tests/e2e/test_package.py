# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The wheel as a user installs it: ci/package.sh's wheel into a fresh venv beside
nixl-cu12==1.5.1, no NIXL_PLUGIN_DIR. NIXL lists DAOS beside UCX and POSIX and a transfer
round-trips; `nixl-daos doctor` passes a healthy setup and fails a wrong pool, a shadowing
plugin and (real engine) a stopped daos_agent, each with its fix; `install --as` and `remove`.
Against daos-sim, and against the real engine in the real pass (DAOS_POOL, DAOS_CONT and
NIXL_DAOS_LIBDAOS as the pass sets them)."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import daoskit

NIXL_VERSION = "1.5.1"


def run(cmd, env=None, timeout=300, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, **kw)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv with nixl-cu12 and the wheel, and the environment to run it in (the pass's
    pool, container and libdaos; no NIXL_PLUGIN_DIR)."""
    p = run(["bash", str(daoskit.REPO / "ci" / "package.sh")], timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    wheels = sorted((daoskit.REPO / "dist").glob("nixl_daos-*-py3-none-manylinux_2_28_x86_64.whl"))
    assert len(wheels) == 1, wheels
    root = tmp_path_factory.mktemp("wheel-venv")
    p = run([sys.executable, "-m", "venv", str(root)])
    assert p.returncode == 0, p.stderr
    py = root / "bin" / "python"
    # --no-deps: nixl-cu12 declares torch, which DRAM and OBJ do not need; numpy its _api imports.
    # nixl-cu13 beside it, as NIXL's `nixl` meta package installs them (each has its own plugin
    # directory; the wheel serves both).
    nixls = [f"nixl-cu12=={NIXL_VERSION}", f"nixl-cu13=={NIXL_VERSION}"]
    p = run([str(py), "-m", "pip", "install", "-q", "--no-deps", *nixls, "numpy", str(wheels[0])])
    assert p.returncode == 0, p.stdout + p.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("NIXL_PLUGIN_DIR", "PYTHONPATH")}
    # A consumer starts in its own directory, not in this repository (whose python/ is not on its path).
    site = Path(run([str(py), "-c", "import site; print(site.getsitepackages()[0])"]).stdout.strip())
    return {
        "py": py,
        "bin": root / "bin",
        "env": env,
        "plugins": site / ".nixl_cu12.mesonpy.libs" / "plugins",
        "plugins13": site / ".nixl_cu13.mesonpy.libs" / "plugins",
    }


def doctor(venv, *args, env=None):
    p = run([str(venv["bin"] / "nixl-daos"), "doctor", *args], env=env or venv["env"], timeout=600, cwd="/")
    return p.returncode, p.stdout + p.stderr


def line_of(out: str, what: str) -> str:
    """A check's report line with the indented lines under it (what the plugin said, the fix)."""
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln[6:].startswith(what + ":"):
            j = i + 1
            while j < len(lines) and lines[j].startswith("      "):
                j += 1
            return "\n".join(lines[i:j])
    raise AssertionError(f"no {what!r} line in:\n{out}")


ROUND_TRIP = """
import numpy as np
from nixl_cu12._api import nixl_agent, nixl_agent_config
a = nixl_agent("wheel", nixl_agent_config(backends=[]))
print("listed", " ".join(sorted(a.get_plugin_list())))
a.create_backend("DAOS", {})  # DAOS_POOL and DAOS_CONT: daos-sim's, or the real pass's
data, back = np.arange(1 << 16, dtype=np.uint8), np.zeros(1 << 16, dtype=np.uint8)
a.register_memory([(data.ctypes.data, data.nbytes, 0, ""), (back.ctypes.data, back.nbytes, 0, "")], "DRAM")
a.register_memory([(0, data.nbytes, 0, "wheel-key")], "OBJ", backends=["DAOS"])
for op, buf in (("WRITE", data), ("READ", back)):
    h = a.initialize_xfer(op, a.get_xfer_descs([(buf.ctypes.data, buf.nbytes, 0)], "DRAM"),
                          a.get_xfer_descs([(0, buf.nbytes, 0)], "OBJ"), a.name, backends=["DAOS"])
    state = a.transfer(h)
    while state == "PROC":
        state = a.check_xfer_state(h)
    assert state == "DONE", state
print("same" if (data == back).all() else "differ")
"""


def test_pip_install_lists_daos_beside_nixls_own_plugins(venv):
    p = run([str(venv["py"]), "-c", ROUND_TRIP], env=venv["env"], cwd="/")
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    listed = next(ln for ln in p.stdout.splitlines() if ln.startswith("listed ")).split()[1:]
    assert {"DAOS", "UCX", "POSIX"} <= set(listed), listed
    assert p.stdout.strip().splitlines()[-1] == "same", p.stdout


def test_the_readmes_quick_start_runs_from_the_wheel(venv):
    p = run([str(venv["py"]), str(daoskit.REPO / "examples" / "quickstart.py")], env=venv["env"], cwd="/")
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "read back equal; queryMem: [{'size': '1048576'}]" in p.stdout, p.stdout


def test_nixl_cu13_beside_cu12_gets_the_plugin_too(venv):
    """The wheel's copy in nixl-cu13's directory; install and remove act on both directories."""
    p = run([str(venv["py"]), "-c", ROUND_TRIP.replace("nixl_cu12", "nixl_cu13")], env=venv["env"], cwd="/")
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "same", p.stdout + p.stderr[-3000:]
    rc, out = doctor(venv, "--nixl", "nixl_cu13")
    assert rc == 0 and "nixl-cu13 1.5.1" in line_of(out, "NIXL"), out
    cli = str(venv["bin"] / "nixl-daos")
    assert run([cli, "install", "--as", "DAOS_OBJ"], env=venv["env"]).returncode == 0
    both = [d / "libplugin_DAOS_OBJ.so" for d in (venv["plugins"], venv["plugins13"])]
    assert all(f.is_file() for f in both), both
    p = run([cli, "remove", "--as", "DAOS_OBJ", "--nixl", "nixl_cu13"], env=venv["env"])
    assert p.returncode == 0 and both[0].is_file() and not both[1].exists(), p.stdout + p.stderr
    assert run([cli, "remove", "--as", "DAOS_OBJ"], env=venv["env"]).returncode == 0
    assert not any(f.exists() for f in both)


def test_doctor_passes_a_healthy_setup_and_its_io(venv):
    rc, out = doctor(venv, "--io")
    assert rc == 0, out
    assert out.strip().splitlines()[-1].startswith("nixl-daos doctor: healthy"), out
    for what in ("NIXL", "DAOS plugin", "NIXL loads it", "libdaos", "daos_agent", "pool and container", "I/O"):
        assert line_of(out, what).startswith("ok    "), line_of(out, what)
    assert "the test key removed" in line_of(out, "I/O"), out
    if daoskit.TESTBED:
        # daos-local.sh's client environment names a D_LOG_FILE, and its agent has no
        # cache_expiration: both are warned of, and do not fail the run.
        assert "warn  settings: D_LOG_FILE=" in out, out
        assert "cache_expiration is not set" in out, out


def test_doctor_names_a_wrong_pool(venv):
    rc, out = doctor(venv, "--pool", "no-such-pool-here")
    assert rc == 1, out
    line = line_of(out, "pool and container")
    assert line.startswith("FAIL  ") and "no-such-pool-here" in line, out
    assert "fix: " in line, out
    assert out.strip().splitlines()[-1].startswith("nixl-daos doctor: 1 check failed"), out


def test_doctor_names_a_missing_libdaos(venv):
    """A libdaos that is not there is a failure naming the variable to set, not a crash."""
    env = dict(venv["env"], NIXL_DAOS_LIBDAOS="/nonexistent/libdaos.so.2")
    rc, out = doctor(venv, env=env)
    assert rc == 1, out
    line = line_of(out, "libdaos")
    assert line.startswith("FAIL  ") and "NIXL_DAOS_LIBDAOS" in line, out


@pytest.mark.skipif(daoskit.TESTBED, reason="daos-sim reports the release DAOS_SIM_VERSION names")
@pytest.mark.parametrize("allow", [False, True])
def test_doctor_names_a_daos_release_this_build_refuses(venv, allow):
    """A libdaos of client API 2.7.0, as DAOS 2.6.1 to 2.6.5 report: a failure naming DAOS 2.6
    and the override; with the override a warning, and the run passes."""
    env = dict(venv["env"], DAOS_SIM_VERSION="2.7.0")
    env.pop("NIXL_DAOS_ALLOW_UNTESTED_DAOS", None)
    if allow:
        env["NIXL_DAOS_ALLOW_UNTESTED_DAOS"] = "1"
    rc, out = doctor(venv, env=env)
    line = line_of(out, "libdaos")
    assert "DAOS client API 2.7.0 (as DAOS 2.6.1 to 2.6.5 report)" in line, out
    if allow:
        assert rc == 0 and line.startswith("warn  ") and "NIXL_DAOS_ALLOW_UNTESTED_DAOS=1" in line, out
        assert "`daos cont create`, not create_container=true" in line, out
    else:
        assert rc == 1 and line.startswith("FAIL  ") and "set NIXL_DAOS_ALLOW_UNTESTED_DAOS=1" in line, out


def test_a_shadowing_plugin_is_named_and_install_keeps_it_apart(venv):
    plugins = venv["plugins"]
    ours = plugins / "libplugin_DAOS.so"
    saved = ours.read_bytes()
    other = plugins / "libplugin_POSIX.so"  # any plugin that is not ours, named DAOS
    shutil.copyfile(other, ours)
    cli = str(venv["bin"] / "nixl-daos")
    cu12 = ["--nixl", "nixl_cu12"]  # the DAOS copy in nixl-cu13's directory is not part of this
    try:
        rc, out = doctor(venv)
        assert rc == 1, out
        line = line_of(out, "DAOS plugin")
        assert line.startswith("FAIL  ") and "another plugin named DAOS" in line, out
        assert "nixl-daos install --as DAOS_OBJ" in line, out
        # install refuses to overwrite it; under another name it goes beside it.
        p = run([cli, "install", *cu12], env=venv["env"])
        assert p.returncode == 1 and "--replace" in p.stderr, p.stdout + p.stderr
        assert ours.read_bytes() == other.read_bytes()
        p = run([cli, "install", "--as", "DAOS_OBJ"], env=venv["env"])
        assert p.returncode == 0, p.stdout + p.stderr
        probe = (
            "from nixl_cu12._api import nixl_agent, nixl_agent_config as c; "
            "print(sorted(nixl_agent('p', c(backends=[])).get_plugin_list()))"
        )
        listed = run([str(venv["py"]), "-c", probe], env=venv["env"], cwd="/").stdout
        assert "'DAOS_OBJ'" in listed and "'DAOS'" in listed, listed
        assert run([cli, "remove", "--as", "DAOS_OBJ"], env=venv["env"]).returncode == 0
        assert not (plugins / "libplugin_DAOS_OBJ.so").exists()
        # --replace keeps the other aside; remove puts it back.
        p = run([cli, "install", "--replace", *cu12], env=venv["env"])
        assert p.returncode == 0 and ours.read_bytes() == saved, p.stdout + p.stderr
        assert (plugins / "libplugin_DAOS.so.before-nixl-daos").read_bytes() == other.read_bytes()
        p = run([cli, "remove", *cu12], env=venv["env"])
        assert p.returncode == 0 and ours.read_bytes() == other.read_bytes(), p.stdout + p.stderr
        # remove never deletes a plugin that is not ours.
        p = run([cli, "remove", *cu12], env=venv["env"])
        assert p.returncode == 1 and ours.exists(), p.stdout + p.stderr
        p = run([cli, "install", "--as", "no/slash"], env=venv["env"])
        assert p.returncode == 2 and "letters, digits" in p.stderr, p.stdout + p.stderr
    finally:
        ours.write_bytes(saved)
        for f in plugins.glob("libplugin_DAOS*.so*"):
            if f.name != "libplugin_DAOS.so":
                f.unlink()
    rc, out = doctor(venv)
    assert rc == 0, out


def test_install_as_obj_serves_consumers_that_ask_for_obj(venv):
    """`install --as OBJ --replace` (KVBM, LMCache's allow-list): NIXL's S3 plugin kept aside and
    put back by `remove --as OBJ`."""
    cli = str(venv["bin"] / "nixl-daos")
    obj = venv["plugins"] / "libplugin_OBJ.so"
    nixls = obj.read_bytes()
    p = run([cli, "install", "--as", "OBJ", "--replace"], env=venv["env"])
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        script = ROUND_TRIP.replace('"DAOS"', '"OBJ"')
        p = run([str(venv["py"]), "-c", script], env=venv["env"], cwd="/")
        assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "same", p.stdout + p.stderr[-3000:]
        where = run([cli, "where"], env=venv["env"]).stdout
        assert "also served as OBJ" in where and "kept aside by --replace" in where, where
    finally:
        p = run([cli, "remove", "--as", "OBJ"], env=venv["env"])
    assert p.returncode == 0 and obj.read_bytes() == nixls, p.stdout + p.stderr
    # NIXL reinstalled over our OBJ (its file back in place): remove drops the stale backup
    # and leaves NIXL's file; install --replace then keeps that newer one aside.
    assert run([cli, "install", "--as", "OBJ", "--replace"], env=venv["env"]).returncode == 0
    obj.write_bytes(nixls)
    p = run([cli, "remove", "--as", "OBJ"], env=venv["env"])
    assert p.returncode == 0 and "stale" in p.stdout and obj.read_bytes() == nixls, p.stdout + p.stderr
    assert not obj.with_name(obj.name + ".before-nixl-daos").exists()


def test_doctor_fails_a_plugin_of_ours_that_nixl_cannot_load(venv):
    """What an old glibc or libstdc++ would do to the wheel's plugin (dlopen fails): NIXL lists
    the file by its name and its Python API swallows the error; the doctor does not."""
    ours = venv["plugins"] / "libplugin_DAOS.so"
    saved = ours.read_bytes()
    # Still ours (it says nd_plugin_version), but it needs a library this host does not have:
    # dlopen fails as it would for a glibc or libstdc++ too old.
    assert saved.count(b"libgcc_s.so.1\0") == 1
    ours.write_bytes(saved.replace(b"libgcc_s.so.1\0", b"libgcc_x.so.1\0"))
    try:
        rc, out = doctor(venv)
    finally:
        ours.write_bytes(saved)
    assert rc == 1, out
    line = line_of(out, "NIXL loads it")
    assert line.startswith("FAIL  ") and "does not load DAOS" in line and "libgcc_x.so.1" in line, out


@pytest.mark.skipif(
    not (daoskit.TESTBED and os.environ.get("NIXL_DAOS_LOCAL")), reason="stops the real engine's daos_agent"
)
def test_doctor_names_a_stopped_daos_agent(venv):
    run_dir = Path(os.environ.get("DAOS_LOCAL_DIR", "/tmp/daos-local")) / "run"
    pid_file = run_dir / "agent.pid"
    pid = int(pid_file.read_text())
    argv = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    sock = Path(os.environ["DAOS_AGENT_DRPC_DIR"]) / "daos_agent.sock"
    os.kill(pid, signal.SIGINT)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    else:
        # Still shutting down after 10 s (a loaded machine): the agent started below must not
        # meet it holding the socket.
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
    try:
        rc, out = doctor(venv)
        assert rc == 1, out
        line = line_of(out, "daos_agent")
        assert line.startswith("FAIL  ") and "start daos_agent" in line and str(sock) in line, out
        assert "skip  pool and container: not tried" in out, out
    finally:
        # A socket the stopped agent left behind would read as the new one listening.
        sock.unlink(missing_ok=True)
        with open(run_dir / "log" / "agent.stdout", "ab") as log:
            agent = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        pid_file.write_text(f"{agent.pid}\n")
        for _ in range(120):
            if sock.exists():
                break
            time.sleep(0.5)
    # Every later test needs the agent back: wait until the doctor finds it serving (up to 30 s),
    # rather than a fixed pause.
    for _ in range(30):
        rc, out = doctor(venv)
        if rc == 0 or agent.poll() is not None:
            break
        time.sleep(1)
    log_tail = (run_dir / "log" / "agent.stdout").read_text(errors="replace")[-2000:]
    assert rc == 0, f"{out}\nagent exit status: {agent.poll()}\nagent log:\n{log_tail}"
