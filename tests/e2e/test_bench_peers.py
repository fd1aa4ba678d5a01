# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark's peers beside ours (issue 18): the side-by-side tables' columns and pass-by-pass
ratios for NIXL POSIX on dfuse and the reference C++ plugin, the reference contender's refusal
without its library, and bench/reference.sh's answers to a missing source. No DAOS, no compiler."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench import side_by_side
from bench.kv_contenders import CppPluginContender

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
    # Ours leads cpp by 2.0 best to best; pass by pass 3.0, 1.5 and 2.5 -> median 2.5.
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
    with pytest.raises(SystemExit, match="bench/reference.sh SRC"):
        CppPluginContender("real cpp")
    monkeypatch.setenv("NIXL_DAOS_CPP_PLUGIN", str(tmp_path / "nope.so"))
    with pytest.raises(SystemExit, match="nope.so"):
        CppPluginContender("real cpp")
    so = tmp_path / "built.so"
    so.write_bytes(b"")
    monkeypatch.setenv("NIXL_DAOS_CPP_PLUGIN", str(so))
    CppPluginContender("real cpp")
    # NIXL finds a backend by file name: the library is linked in as backend DAOSCPP.
    assert os.path.realpath(tmp_path / "libplugin_DAOSCPP.so") == str(so)


def reference_sh(*args, **env):
    e = {k: v for k, v in os.environ.items() if k != "NIXL_DAOS_CPP_SRC"} | env
    return subprocess.run(
        ["bash", str(REPO / "bench/reference.sh"), *args], capture_output=True, text=True, env=e, timeout=60
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
