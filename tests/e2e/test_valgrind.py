# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""valgrind memcheck over scenario_valgrind.py (release in flight, prepped list after
deregistration, queryMem past its deadline, hang then destroy, exit in flight): no memcheck error
may have a frame of ours (the plugin, its shim, daos-sim). Python's and NIXL's own reports
(uninitialised reads in the interpreter's GC, the dynamic loader) are not ours to fix."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
OURS = re.compile(r"plugin_DAOS|nixl_daos|daos_sim|libplugin_DAOS|libdaos_sim")


def our_errors(log: str) -> list[str]:
    """memcheck error blocks (blank-line separated) that name one of our frames."""
    found = []
    for block in re.split(r"\n==\d+== \n", log):
        if re.search(
            r"^==\d+== (Invalid|Use of uninitialised|Conditional jump|Mismatched|Source and destination"
            r"|Syscall param|Argument)",
            block,
            re.M,
        ) and OURS.search(block):
            found.append(block)
    return found


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (ci/setup.sh installs it)")
def test_memcheck_of_the_safety_scenarios(tmp_path, calm_sim):
    log = tmp_path / "memcheck.log"
    proc = subprocess.run(
        [
            "valgrind",
            "--tool=memcheck",
            "--error-limit=no",
            "--num-callers=40",
            "--leak-check=no",
            f"--log-file={log}",
            sys.executable,
            str(HERE / "scenario_valgrind.py"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONMALLOC": "malloc"},
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert "scenario done" in proc.stdout
    text = log.read_text()
    assert "ERROR SUMMARY" in text, "memcheck did not finish"
    ours = our_errors(text)
    assert not ours, f"{len(ours)} memcheck error(s) in our frames, first:\n{ours[0][:4000]}"


def test_the_filter_sees_our_frames():
    """The filter above must be able to fail: a report naming a frame of ours is caught."""
    fake = (
        "==1== \n==1== Invalid read of size 8\n==1==    at 0x1: plugin_DAOS::lanes::Lane::reap (lanes.rs:1)\n==1== \n"
    )
    assert len(our_errors(fake)) == 1
    other = "==1== \n==1== Invalid read of size 8\n==1==    at 0x1: visit_decref (gcmodule.c:452)\n==1== \n"
    assert our_errors(other) == []
