# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Two tenants on one real DAOS: root and a second Unix user this module creates (and removes
after), admitted to the pool by its ACL. DAOS enforces container ACLs between local users here,
so what is checked is what a site gets:

- a container root's plugin creates admits root alone: the tenant's create_backend is refused
  with a message naming it and the `daos cont update-acl` that would admit it, and root is
  refused the tenant's container in turn;
- with `cont_acl` naming the tenant `rw`, each reads what the other wrote, byte for byte;
- with `r` (on the container, or on the pool), the tenant reads and queries, its WRITE is
  NIXL_ERR_NOT_ALLOWED, it says so in one log line, and root's keys stay whole after it held its
  backend open on a pool below evict_keep_free=90 (no evictor runs), where root's own backend with
  that setting then evicts them;
- each tenant's eviction stays in its own container: root's keys are whole after the tenant's
  evictor punched the tenant's own oldest keys.

Each tenant runs in a subprocess (tests/e2e/real_tenant.py) that becomes its user before it
creates its agent. Root only, real engine only (NIXL_DAOS_TESTBED=1 with daos-local.sh's env)."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import daoskit

HERE = Path(__file__).resolve().parent
BIN = os.environ.get("DAOS_LOCAL_BIN", "")
CONTROL = Path(os.environ.get("DAOS_LOCAL_DIR", "/tmp/daos-local")) / "etc" / "daos_control.yml"

pytestmark = pytest.mark.skipif(
    not (daoskit.TESTBED and os.geteuid() == 0 and BIN and CONTROL.is_file()),
    reason="two Unix users on a real engine: needs root, NIXL_DAOS_TESTBED=1 and daos-local.sh's env (DAOS_LOCAL_BIN)",
)

SIZE = 1 << 20
KEYS = 4


def dmg(*args: str) -> str:
    p = subprocess.run(
        [f"{BIN}/dmg", "-o", str(CONTROL), *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert p.returncode == 0, f"dmg {' '.join(args)}: {p.stdout}{p.stderr}"
    return p.stdout


def pool_acl(entry: str) -> None:
    dmg("pool", "update-acl", "-e", entry, os.environ["DAOS_POOL"])


def pool_space() -> tuple[int, int]:
    """(free, total) bytes of the pool."""
    tiers = json.loads(dmg("-j", "pool", "query", os.environ["DAOS_POOL"]))["response"]["tier_stats"]
    return sum(t["free"] for t in tiers), sum(t["total"] for t in tiers)


# Containers made here, with the user that may destroy them (None: root), destroyed at the end.
MADE: list[tuple[object, str]] = []


def container(tag: str, owner=None) -> str:
    name = f"acl-{tag}-{uuid.uuid4().hex[:8]}"
    MADE.append((owner, name))
    return name


def destroy(owner, cont: str) -> None:
    """`daos cont destroy` as its owner (a container the plugin creates admits its owner alone)."""
    cmd = [f"{BIN}/daos", "cont", "destroy", os.environ["DAOS_POOL"], cont]
    if owner is not None:
        cmd = ["runuser", "-u", owner[0], "--", *cmd]
    # daos-local.sh's client log is root's.
    env = dict(os.environ, D_LOG_FILE="/dev/null")
    subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False, env=env)


@pytest.fixture(scope="module")
def under_keep_free():
    """The pool below 85% free for the module, where an evictor with evict_keep_free=90 must
    punch: as it is, or with ballast (a container of root's, eviction off, sized from the pool)."""
    free, total = pool_space()
    if free >= 0.85 * total:
        size = 4 << 20
        n = int(free - 0.80 * total) // size + 1
        out, err = as_user(
            None,
            params={"container": container("ballast"), "create_container": "true", "evict": "false"},
            fill=["ballast", n, size],
        )
        assert out["filled"] == n, f"{out}\n{err[-3000:]}"
        free, total = pool_space()
    assert free < 0.85 * total, (free, total)


@pytest.fixture(scope="module")
def tenant():
    """(name, uid, gid) of a fresh system user with `rw` on the pool; removed after, with its
    pool ACL entry."""
    name = f"nixlt{os.getpid() % 100000}"
    subprocess.run(["userdel", name], capture_output=True, check=False)
    p = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if p.returncode != 0:
        pytest.skip(f"cannot create a second user: {p.stderr.strip()}")
    import pwd

    pw = pwd.getpwnam(name)
    try:
        pool_acl(f"A::{name}@:rw")
        yield name, pw.pw_uid, pw.pw_gid
    finally:
        for owner, cont in reversed(MADE):
            destroy(owner, cont)
        MADE.clear()
        subprocess.run(
            [f"{BIN}/dmg", "-o", str(CONTROL), "pool", "delete-acl", "-p", f"u:{name}@", os.environ["DAOS_POOL"]],
            capture_output=True,
            check=False,
            timeout=60,
        )
        subprocess.run(["userdel", name], capture_output=True, check=False)


def as_user(user, log: str | None = None, **spec) -> tuple[dict, str]:
    """Runs real_tenant.py as `user` (None: root), with NIXL_LOG_LEVEL `log` if given; returns
    its JSON line and its stderr."""
    if user is not None:
        spec.update(uid=user[1], gid=user[2])
    env = dict(os.environ)
    # The plugin picks a log file of the tenant's own (daos-local.sh's is root's).
    env.pop("D_LOG_FILE", None)
    if log:
        env["NIXL_LOG_LEVEL"] = log
    p = subprocess.run(
        [sys.executable, str(HERE / "real_tenant.py"), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=HERE,
        check=False,
    )
    assert p.returncode == 0, f"tenant exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def keys(prefix: str, seed: int) -> list[list]:
    return [[f"{prefix}/{i}", SIZE, seed + i] for i in range(KEYS)]


def root_writes(cont: str, written: list[list], **params: str) -> None:
    out, err = as_user(None, params={"container": cont, "create_container": "true", **params}, write=written)
    assert out["create"] == "ok" and out["written"] == len(written), f"{out}\n{err[-3000:]}"


def assert_whole(cont: str, written: list[list], user=None) -> None:
    out, err = as_user(user, params={"container": cont}, read=written)
    assert out["create"] == "ok", f"{out}\n{err[-3000:]}"
    assert out["read"] == {k: "ok" for k, _, _ in written}, out
    assert out["query"] == {k: SIZE for k, _, _ in written}, out


def test_a_created_container_admits_its_owner_alone(tenant):
    cont = container("own")
    written = keys("root", 10)
    root_writes(cont, written)
    out, err = as_user(tenant, params={"container": cont}, read=written)
    assert out["euid"] == tenant[1]
    assert out["create"].startswith("nixlBackendError"), out
    fix = f"`daos cont update-acl {os.environ['DAOS_POOL']} {cont} --entry A::{tenant[0]}@:rw`"
    assert "DER_NO_PERM" in err and f"user {tenant[0]} (uid {tenant[1]})" in err and fix in err, err[-3000:]
    # And the other way round: the tenant's own container is the tenant's alone.
    theirs = container("theirs", tenant)
    out, err = as_user(tenant, params={"container": theirs, "create_container": "true"}, write=keys("t", 20))
    assert out["create"] == "ok" and out["written"] == KEYS, f"{out}\n{err[-3000:]}"
    out, err = as_user(None, params={"container": theirs}, read=keys("t", 20))
    assert out["create"].startswith("nixlBackendError") and "DER_NO_PERM" in err, f"{out}\n{err[-3000:]}"
    assert_whole(theirs, keys("t", 20), tenant)
    assert_whole(cont, written)


def test_cont_acl_rw_shares_the_cache_both_ways(tenant):
    cont = container("rw")
    written = keys("root", 30)
    root_writes(cont, written, cont_acl=f"A::{tenant[0]}@:rw")
    theirs = keys("tenant", 40)
    out, err = as_user(tenant, params={"container": cont}, read=written, write=theirs)
    assert out["create"] == "ok" and out["written"] == KEYS, f"{out}\n{err[-3000:]}"
    assert out["read"] == {k: "ok" for k, _, _ in written}, out
    assert_whole(cont, theirs)


@pytest.mark.parametrize("where", ["container", "pool"])
def test_a_read_only_entry_reads_and_neither_writes_nor_evicts(tenant, where, under_keep_free):
    cont = container(f"ro-{where}")
    written = keys("root", 50)
    if where == "container":
        root_writes(cont, written, cont_acl=f"A::{tenant[0]}@:r")
    else:
        root_writes(cont, written, cont_acl=f"A::{tenant[0]}@:rw")
        pool_acl(f"A::{tenant[0]}@:r")
    try:
        # evict_keep_free=90: a writer's evictor would start punching the oldest keys of a pool
        # this full; the tenant holds its backend open past two of its checks.
        out, err = as_user(
            tenant,
            "INFO",
            params={"container": cont, "evict_keep_free": "90"},
            read=written,
            try_write=["tenant/x", SIZE, 99],
            hold_s=2.5,
        )
    finally:
        if where == "pool":
            pool_acl(f"A::{tenant[0]}@:rw")
    assert out["create"] == "ok", f"{out}\n{err[-3000:]}"
    assert out["read"] == {k: "ok" for k, _, _ in written}, out
    assert out["query"] == {k: SIZE for k, _, _ in written}, out
    assert out["try_write"].startswith("nixlNotAllowedError"), out
    said = [line for line in err.splitlines() if "DAOS backend" in line and "read-only" in line and "WARN" in line]
    assert len(said) == 1, f"the read-only backend said so {len(said)} times:\n{err[-3000:]}"
    fix = (
        f"`daos cont update-acl {os.environ['DAOS_POOL']} {cont} --entry A::{tenant[0]}@:rw`"
        if where == "container"
        else f"`dmg pool update-acl -e A::{tenant[0]}@:rw {os.environ['DAOS_POOL']}`"
    )
    assert fix in said[0] and "(w)" in said[0], said[0]
    # Its refused WRITE is said once at ERROR (for hosts that log errors only), and it runs no
    # evictor (DAOS would refuse its punches anyway: the plugin does not try).
    errors = [line for line in err.splitlines() if "DAOS backend" in line and "ERROR" in line]
    assert len(errors) == 1 and "read-only" in errors[0], err[-3000:]
    assert "evicted its oldest keys" not in err, err[-3000:]
    assert_whole(cont, written)
    # The control: a writer with the same setting, on the same pool, does evict root's keys.
    out, err = as_user(None, "INFO", params={"container": cont, "evict_keep_free": "90"}, hold_s=2.5, read=written)
    assert "miss" in out["read"].values(), f"a writer's evictor left every key: {out}\n{err[-3000:]}"


def test_a_tenants_eviction_stays_in_its_own_container(tenant, under_keep_free):
    """The tenant writes 400 MiB into its own container with evict_keep_free=90 on a pool below
    85% free, so its evictor punches its own oldest keys at once; root's keys in root's
    container are whole afterwards."""
    cont = container("mine")
    written = keys("root", 60)
    root_writes(cont, written)
    size, n = 4 << 20, 100
    theirs = container("evict", tenant)
    out, err = as_user(
        tenant,
        params={"container": theirs, "create_container": "true", "evict_keep_free": "90"},
        fill=["fill", n, size],
        hold_s=5,
    )
    assert out["create"] == "ok", f"{out}\n{err[-3000:]}"
    # Its evictor worked: its oldest keys are gone.
    assert out["filled"] == n and out["fill_oldest_present"] < n // 10, f"{out}\n{err[-3000:]}"
    assert_whole(cont, written)
