# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The files the plugin opens itself (libdaos's default log, the totals file) cannot be chosen
by another local user: as root, another uid plants links and files at their names in a shared,
sticky temp dir (like /tmp) before a root process creates the DAOS backend, moves data and exits;
the root-only file the links point at must be unchanged and the process must work.

The plugin makes and checks libdaos's log file itself before handing its name to libdaos, so
these hold on daos-sim too (which never opens D_LOG_FILE). Root only: skipped otherwise."""

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to act as a second user)")


@pytest.fixture
def other_user():
    """(uid, gid) of a second, unprivileged user: `nobody`."""
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user `nobody` to act as the other user")
    return pw.pw_uid, pw.pw_gid


@pytest.fixture
def shared_tmp():
    """A temp dir like /tmp: root's, mode 1777, under the system temp dir (so that the other user
    can reach it)."""
    d = Path(tempfile.mkdtemp(prefix="nixl-daos-shared-", dir="/tmp"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def victim(tmp_path):
    """A file only root can read or write, with its content and status to compare after."""
    v = tmp_path / "root-only"
    v.write_text("root's own data\n")
    v.chmod(0o600)
    return v


def as_user(user: tuple[int, int], script: str) -> None:
    """`script` (sh) run as the other user."""
    uid, gid = user
    p = subprocess.run(
        ["sh", "-ec", script], user=uid, group=gid, extra_groups=[], capture_output=True, text=True, timeout=10
    )
    assert p.returncode == 0, p.stderr


def run_root_process(tmpdir: Path, stats: Path) -> subprocess.CompletedProcess:
    """tests/e2e/totals_report.py as root: creates the backend, moves a few keys, exits (the
    totals go to `stats`), with D_LOG_FILE unset and TMPDIR=`tmpdir`."""
    env = {k: v for k, v in os.environ.items() if k != "D_LOG_FILE"}
    env.update(TMPDIR=str(tmpdir), NIXL_DAOS_STATS_FILE=str(stats), NIXL_LOG_LEVEL="DEBUG")
    return subprocess.run(
        [sys.executable, str(HERE / "totals_report.py")], capture_output=True, text=True, timeout=60, env=env
    )


def snapshot(p: Path) -> tuple:
    st = p.lstat()
    return p.read_bytes(), st.st_mode, st.st_uid, st.st_nlink, st.st_mtime_ns


def test_links_planted_by_another_user_are_not_followed(other_user, shared_tmp, victim):
    """The other user links the old predictable log name, the private dir's name (to a dir of
    theirs with a link to the victim at the log's name) and the totals file to the victim."""
    before = snapshot(victim)
    uid = os.geteuid()
    t, v = shared_tmp, victim
    as_user(
        other_user,
        f"ln -s {v} {t}/nixl-daos-libdaos.{uid}.log; mkdir -m 777 {t}/evil; ln -s {v} {t}/evil/libdaos.log; "
        f"ln -s {t}/evil {t}/nixl-daos.{uid}; ln -s {v} {t}/stats.jsonl",
    )
    p = run_root_process(t, t / "stats.jsonl")
    assert p.returncode == 0 and "moved" in p.stdout, p.stderr[-3000:]
    assert snapshot(victim) == before
    err = p.stderr
    assert f"{t}/nixl-daos.{uid}: is a symbolic link (to {t}/evil)" in err, err[-3000:]
    assert "libdaos logs to /dev/null instead" in err, err[-3000:]
    assert f"{t}/stats.jsonl: is a symbolic link (to {v})" in err, err[-3000:]
    assert sorted(x.name for x in (t / "evil").iterdir()) == ["libdaos.log"]  # nothing made through the link


def test_files_another_user_created_first_are_refused(other_user, shared_tmp, victim):
    """The other user creates the private dir's name as a dir of theirs (open to all, with a link
    to the victim at the log's name) and the totals file as a file of theirs."""
    before = snapshot(victim)
    uid = os.geteuid()
    t, v = shared_tmp, victim
    as_user(
        other_user,
        f"mkdir -m 777 {t}/nixl-daos.{uid}; ln -s {v} {t}/nixl-daos.{uid}/libdaos.log; "
        f"touch {t}/stats.jsonl; chmod 666 {t}/stats.jsonl",
    )
    p = run_root_process(t, t / "stats.jsonl")
    assert p.returncode == 0 and "moved" in p.stdout, p.stderr[-3000:]
    assert snapshot(victim) == before
    err = p.stderr
    assert f"{t}/nixl-daos.{uid}: the directory belongs to uid {other_user[0]}" in err, err[-3000:]
    assert "libdaos logs to /dev/null instead" in err, err[-3000:]
    assert f"{t}/stats.jsonl: the file belongs to uid {other_user[0]}" in err, err[-3000:]
    assert (t / "stats.jsonl").read_text() == ""


def test_without_a_planted_name_the_files_are_made_private(shared_tmp):
    """Nothing planted: the plugin makes $TMPDIR/nixl-daos.<uid>/ (0700) and libdaos.log in it
    (0600) and points libdaos at it; the totals file is made 0600 and gets its line."""
    t, uid = shared_tmp, os.geteuid()
    p = run_root_process(t, t / "stats.jsonl")
    assert p.returncode == 0 and "moved" in p.stdout, p.stderr[-3000:]
    d, log = t / f"nixl-daos.{uid}", t / f"nixl-daos.{uid}" / "libdaos.log"
    assert f"libdaos logs to {log} instead of stdout" in p.stderr, p.stderr[-3000:]
    sd, sl, ss = d.lstat(), log.lstat(), (t / "stats.jsonl").lstat()
    assert stat.S_ISDIR(sd.st_mode) and stat.S_IMODE(sd.st_mode) == 0o700 and sd.st_uid == uid
    assert stat.S_ISREG(sl.st_mode) and stat.S_IMODE(sl.st_mode) == 0o600 and sl.st_uid == uid
    assert stat.S_ISREG(ss.st_mode) and stat.S_IMODE(ss.st_mode) == 0o600 and ss.st_uid == uid
    lines = (t / "stats.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["writes"]["ok"] == 1, lines
    assert not (t / f"nixl-daos-libdaos.{uid}.log").exists()  # the old, predictable name is unused
