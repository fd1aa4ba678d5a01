# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark's peers beside ours (issue 18): the side-by-side tables' columns and pass-by-pass
ratios for NIXL POSIX on dfuse and the other DAOS plugins (the reference C++ plugin, NIXL PR
#2261's libdfs backend), the runner leaving a failing peer
out (but not ours), the real-pool contenders' containers, the reference contender's refusal
without its library, and bench/reference.sh's answers to a bad source. No DAOS, no compiler."""

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import side_by_side
from bench.kv_contenders import CppPluginContender, DfsPluginContender, NixlContender, RealDaosContender
from bench.kv_runner import Bench
from bench.kv_workloads import Workload

REPO = Path(__file__).resolve().parents[2]
MiB = 1 << 20
WORKLOADS = [{"name": "ref", "keys": 12, "layers": 40, "block": MiB}]


def row(contender, op, gbps, passes):
    return {"contender": contender, "workload": "ref", "op": op, "gbps": gbps, "passes": passes}


def results(tmp: Path, name: str, rows) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps({"workloads": WORKLOADS, "rows": rows, "args": {"scale": 0.1}}))
    return d


def test_the_reference_plugin_is_a_column_with_its_pass_by_pass_ratio(tmp_path, capsys):
    # Ours leads cpp by 2.0 best to best; pass by pass 3.0, 2.0 and 2.5 -> median 2.5.
    real = results(
        tmp_path,
        "real",
        [
            row("real default", "write", 2.0, [[0, 1.5], [1, 2.0], [2, 1.0]]),
            row("real cpp", "write", 1.0, [[0, 0.5], [1, 1.0], [2, 0.4]]),
            row("real default", "read", 1.0, [[0, 1.0]]),
            row("posix dfuse", "read", 0.5, [[0, 0.25]]),
        ],
    )
    sim = results(tmp_path, "sim", [])
    assert side_by_side.main([str(sim), str(real), "--depth1", str(real)]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("workload") and "real cpp" in line)
    assert "real dfuse" in head and "real default / cpp" in head
    write = next(line for line in out.splitlines() if line.startswith("ref       write"))
    assert "vs cpp 2.00 (passes 2.50)" in write
    read = next(line for line in out.splitlines() if line.startswith("ref       read"))
    assert "vs dfuse 2.00 (passes 4.00)" in read and "vs cpp" not in read
    # The depth-1 table has both peers, each with its own ratio.
    d1 = out[out.index("one request at a time") :]
    assert "default / cpp (median of the passes' ratios)" in d1
    assert "vs cpp 2.00 (passes 2.50)" in d1 and "vs dfuse 2.00 (passes 4.00)" in d1


def test_ours_over_a_peer_comes_from_the_run_the_peer_ran_in(tmp_path, capsys):
    # The main run's ours (2.0) is the column; the reference plugin ran beside ours in a run of
    # its own (ours 3.0 there, passes 2.0 and 4.0 over cpp's 1.0 and 1.0 -> median 3.0).
    real = results(tmp_path, "real", [row("real default", "write", 2.0, [[0, 2.0]])])
    cpp = results(
        tmp_path,
        "cpp",
        [
            row("real default", "write", 3.0, [[0, 2.0], [1, 4.0]]),
            row("real cpp", "write", 1.0, [[0, 1.0], [1, 1.0]]),
        ],
    )
    sim = results(tmp_path, "sim", [])
    assert side_by_side.main([str(sim), f"{real},{cpp}", "--depth1", f"{real},{cpp}"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("ref       write")]
    assert len(lines) == 2  # the table at every key in flight and the one at depth 1
    for line in lines:
        assert line.split()[2] == "2.00"  # ours' column: the first run's
        assert "vs cpp 3.00 (passes 3.00)" in line


def test_a_peer_left_out_of_a_workload_gets_no_ratio_there(tmp_path, capsys):
    real = results(tmp_path, "real", [row("real default", "write", 2.0, [[0, 2.0]])])
    peers = results(
        tmp_path,
        "peers",
        [
            row("real default", "write", 2.0, [[0, 2.0], [1, 2.0]]),
            row("real cpp", "write", 1.0, [[0, 1.0], [1, 1.0]]),
            {"contender": "real dfs", "workload": "ref", "op": "-", "gbps": 0, "note": "unavailable: boom"},
        ],
    )
    sim = results(tmp_path, "sim", [])
    assert side_by_side.main([str(sim), f"{real},{peers}"]) == 0
    out = capsys.readouterr().out
    write = next(line for line in out.splitlines() if line.startswith("ref       write"))
    assert "vs cpp 2.00 (passes 2.00)" in write and "vs dfs" not in write
    # the peers' run has its own load line
    assert any(line.startswith("real (real cpp, real dfs): ") for line in out.splitlines())


def test_a_run_without_peers_has_no_peer_columns(tmp_path, capsys):
    real = results(tmp_path, "real", [row("real default", "write", 2.0, [[0, 2.0]])])
    sim = results(tmp_path, "sim", [])
    assert side_by_side.main([str(sim), str(real), "--depth1", str(real)]) == 0
    out = capsys.readouterr().out
    assert "vs cpp" not in out and "vs dfuse" not in out
    assert "real cpp " not in next(line for line in out.splitlines() if line.startswith("workload"))


def test_the_reference_contender_names_its_missing_library_and_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("NIXL_PLUGIN_DIR", str(tmp_path))
    monkeypatch.delenv("NIXL_DAOS_CPP_PLUGIN", raising=False)
    with pytest.raises(SystemExit, match="bench/reference.sh cpp SRC"):
        CppPluginContender("real cpp")
    monkeypatch.setenv("NIXL_DAOS_CPP_PLUGIN", str(tmp_path / "nope.so"))
    with pytest.raises(SystemExit, match="nope.so"):
        CppPluginContender("real cpp")
    so = tmp_path / "built.so"
    so.write_bytes(b"")
    monkeypatch.setenv("NIXL_DAOS_CPP_PLUGIN", str(so))
    CppPluginContender("real cpp")
    # NIXL finds a backend by file name: the library is linked in as backend DAOSCPP.
    link = tmp_path / "libplugin_DAOSCPP.so"
    assert os.path.realpath(link) == str(so)
    # A link left by another build (here: dangling) is replaced; a relative path is made absolute.
    link.unlink()
    link.symlink_to(tmp_path / "gone.so")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NIXL_DAOS_CPP_PLUGIN", "built.so")
    CppPluginContender("real cpp")
    assert os.path.realpath(link) == str(so)


class FailingStorage(NixlContender):
    """A contender whose storage cannot be made (as the reference plugin's, were its container
    refused); `wrong` stands for wrong bytes the run already recorded."""

    def __init__(self, kind: str):
        super().__init__("fake", {})
        self.kind = kind

    def open(self, bufs) -> None:
        pass

    def close(self) -> None:
        pass

    def make_storage(self, w):
        raise RuntimeError("no container")


def bench() -> Bench:
    args = SimpleNamespace(window=1, poll_ms=1.0, timeout=5.0, handles="prepared")
    return Bench(args, None, None)


def test_a_failing_peer_is_left_out_and_the_run_goes_on():
    b = bench()
    b.run_contender(FailingStorage("peer"), [Workload("ref", 1, 1, 4096)], False)
    assert "fake" in b.unavailable and not b.failures
    assert [r.note for r in b.rows] == ["unavailable: RuntimeError: no container"]


def test_a_peer_that_returned_wrong_bytes_still_fails_the_run():
    b = bench()
    b.failures.append("fake ref: read-back differs from the source at byte 7")
    b.run_contender(FailingStorage("peer"), [Workload("ref", 1, 1, 4096)], False)
    assert b.rows[-1].note.startswith("wrong data: ") and len(b.failures) == 1


def test_ours_failing_is_not_left_out():
    with pytest.raises(RuntimeError, match="no container"):
        bench().run_contender(FailingStorage("daos"), [Workload("ref", 1, 1, 4096)], False)


def test_the_real_pool_contenders_name_their_containers(monkeypatch, tmp_path):
    ours = RealDaosContender("real default", {"fold": "true"})
    ours.new_container("kvbench-x")  # ours creates it itself
    assert ours.params == {"fold": "true", "container": "kvbench-x", "create_container": "true"}
    assert (ours.mem, ours.meta_info(7)) == ("OBJ", "")
    so = tmp_path / "built.so"
    so.write_bytes(b"")
    monkeypatch.setenv("NIXL_PLUGIN_DIR", str(tmp_path))
    monkeypatch.setenv("NIXL_DAOS_CPP_PLUGIN", str(so))
    monkeypatch.setenv("DAOS_POOL", "tank")
    cpp = CppPluginContender("real cpp")
    cpp.label = "kvbench-y"  # made by the daos tool (new_container), not by the plugin
    assert (cpp.mem, cpp.meta_info(7), cpp.params) == ("FILE", "tank/kvbench-y", {})
    monkeypatch.setenv("NIXL_DAOS_DFS_PLUGIN", str(so))
    dfs = DfsPluginContender("real dfs")
    dfs.new_container("kvbench-z")  # made by the backend, a POSIX container; a file per key
    assert dfs.params == {"pool": "tank", "container": "kvbench-z", "create_container": "true"}
    assert (dfs.mem, dfs.meta_info(7), dfs.backend) == ("OBJ", "k7", "DAOSDFS")


def reference_sh(*args, cwd=None, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("NIXL_DAOS_CPP_SRC", "NIXL_DAOS_DFS_SRC")} | env
    return subprocess.run(
        ["bash", str(REPO / "bench/reference.sh"), *args], capture_output=True, text=True, env=e, timeout=60, cwd=cwd
    )


def test_reference_sh_skips_without_a_source_and_fails_on_a_bad_one(tmp_path):
    r = reference_sh()
    assert r.returncode == 0 and r.stdout.startswith("SKIP:")
    r = reference_sh(str(tmp_path / "missing"))
    assert r.returncode == 1 and "does not exist" in r.stderr
    r = reference_sh(str(tmp_path))  # a directory without the plugin's files
    assert r.returncode == 1 and "no daos_backend.cpp" in r.stderr
    bad = tmp_path / "bad.patch"
    bad.write_text("not a patch\n")
    r = reference_sh(str(bad))
    assert r.returncode == 1 and "did not apply" in r.stderr
    r = reference_sh("bad.patch", cwd=tmp_path)  # relative to where it was given
    assert r.returncode == 1 and "did not apply" in r.stderr and str(bad) in r.stderr


def test_reference_sh_dfs_names_its_own_variable_and_files(tmp_path):
    r = reference_sh("dfs")
    assert r.returncode == 0 and "NIXL_DAOS_DFS_SRC" in r.stdout
    d = tmp_path / "daos"
    d.mkdir()
    for f in ("daos_backend.cpp", "daos_backend.h", "daos_plugin.cpp"):  # the C++ plugin's set
        (d / f).write_text("")
    r = reference_sh("dfs", str(d))
    assert r.returncode == 1 and "no daos_client.cpp" in r.stderr


def test_reference_sh_takes_the_plugin_out_of_its_upstream_patch(tmp_path):
    # A patch of the shape of the upstream one (new files under src/plugins/daos, others beside):
    # it applies; what stops this build is the missing DAOS headers, which names the fix.
    repo = tmp_path / "r"
    (repo / "src/plugins/daos").mkdir(parents=True)
    for f in ("daos_backend.cpp", "daos_backend.h", "daos_plugin.cpp", "meson.build"):
        (repo / "src/plugins/daos" / f).write_text("// stand-in\n")
    (repo / "README").write_text("x\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "plugin"], check=True)
    patch = subprocess.run(git + ["format-patch", "-1", "--stdout"], capture_output=True, text=True, check=True)
    (tmp_path / "0001.patch").write_text(patch.stdout)
    nixl = tmp_path / "nixl/src/api/cpp/backend"  # NIXL's headers, as far as the script looks
    nixl.mkdir(parents=True)
    (nixl / "backend_plugin.h").write_text("")
    env = {"NIXL_SRC": str(tmp_path / "nixl"), "DAOS_PREFIX": str(tmp_path / "no-daos"), "NIXL_DAOS_LIBDAOS": ""}
    r = reference_sh("0001.patch", cwd=tmp_path, **env)
    assert r.returncode == 1 and "no DAOS client headers" in r.stderr, r.stderr
