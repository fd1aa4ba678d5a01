"""Faults on a real DAOS engine, which daos-sim can only imitate: the engine killed (kill -9)
while transfers and queries are in flight, create_backend against the dead server, daos_agent
stopped under an open engine, and a restarted (freshly formatted) engine.

They run only against a local engine that the tests may kill and restart: NIXL_DAOS_LOCAL names
the daos-local.sh that started it (ci/test.sh sets it), and DAOS_CONT is re-created after each
restart. Each scenario runs its consumer in a subprocess, so that the consumer's process staying
up is part of what is checked and DAOS state left behind by a dead server cannot leak into other
tests. The file's name sorts it after the other e2e files, and it leaves a working engine
behind (see the `local_daos` fixture).
"""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import daoskit

HERE = Path(__file__).resolve().parent
LOCAL = os.environ.get("NIXL_DAOS_LOCAL", "")

pytestmark = pytest.mark.skipif(
    not (daoskit.TESTBED and LOCAL),
    reason="kills and restarts a real DAOS engine: needs NIXL_DAOS_TESTBED=1 and NIXL_DAOS_LOCAL=<daos-local.sh>",
)

TIMEOUT_MS = 2000


class LocalDaos:
    """The engine daos-local.sh started: its processes, and a restart (which formats afresh)."""

    def __init__(self, script: str):
        self.script = script
        self.run_dir = Path(os.environ.get("DAOS_LOCAL_DIR", "/tmp/daos-local")) / "run"
        self.dirty = False  # left dead or crippled by a test
        self.env: dict[str, str] = {}  # daos-local.sh settings of the running engine

    def ensure(self, **env: str) -> None:
        """A healthy engine started with these settings; then marked dirty for the test to come."""
        if self.dirty or env != self.env:
            self.restart(**env)
            self.env = env
        self.dirty = True

    def _pid(self, name: str) -> int:
        return int((self.run_dir / f"{name}.pid").read_text().strip())

    def server_pid(self) -> int:
        return self._pid("server")

    def agent_pid(self) -> int:
        return self._pid("agent")

    def engine_pid(self) -> int:
        """The daos_engine child of the daos_server this script started."""
        server = self.server_pid()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)
                comm = fields[0].split("(", 1)[1]
                ppid = int(fields[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == server and comm == "daos_engine":
                return int(stat.parent.name)
        raise AssertionError(f"no daos_engine child of daos_server {server}")

    def restart(self, **env: str) -> None:
        """Stop and start (a fresh format), with daos-local.sh settings overridden by env."""
        for cmd in ("stop", "start"):
            p = subprocess.run(["bash", self.script, cmd], capture_output=True, text=True, timeout=240,
                               env=dict(os.environ, **env))
            assert p.returncode == 0, f"daos-local.sh {cmd}: {p.stdout}{p.stderr}"
        bindir = os.environ["DAOS_LOCAL_BIN"]
        p = subprocess.run([f"{bindir}/daos", "cont", "create", os.environ["DAOS_POOL"], os.environ["DAOS_CONT"]],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"daos cont create: {p.stdout}{p.stderr}"


@pytest.fixture(scope="module")
def local_daos():
    """The local engine, shared by this file's tests: each one that leaves it dead, crippled or
    resized marks it dirty, and the next one restarts it as it needs it (`ensure`), so no restart
    is wasted. At the end it is restarted as it was, unless NIXL_DAOS_LOCAL_STOPS=1 says the
    caller stops it right after (ci/test.sh)."""
    d = LocalDaos(LOCAL)
    yield d
    if (d.dirty or d.env) and os.environ.get("NIXL_DAOS_LOCAL_STOPS") != "1":
        d.restart()


def consumer(script: str, *args, timeout: float = 120, with_stderr: bool = False):
    """Runs a consumer script in a subprocess; returns the JSON object of its last stdout line
    (and its stderr, where the plugin logs, with_stderr)."""
    proc = subprocess.run([sys.executable, "-c", script, str(HERE), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"consumer exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return (out, proc.stderr) if with_stderr else out


PRELUDE = textwrap.dedent(
    """
    import gc, json, os, signal, sys, threading, time
    sys.path.insert(0, sys.argv[1])
    import daoskit
    from daoskit import addr, np
    daoskit.prepare_environment()
    ERRS = daoskit.nixl_errors()

    def restart():
        # daos-local.sh stop + start (a fresh format), then the container again.
        import subprocess
        for cmd in ("stop", "start"):
            subprocess.run(["bash", os.environ["NIXL_DAOS_LOCAL"], cmd], check=True, capture_output=True, timeout=240)
        subprocess.run([os.environ["DAOS_LOCAL_BIN"] + "/daos", "cont", "create", os.environ["DAOS_POOL"],
                        os.environ["DAOS_CONT"]], check=True, capture_output=True, timeout=120)

    def finish(agent, h, state, t_post, limit):
        # Polls one request to DONE or an error; returns (outcome, seconds since its post).
        try:
            while state not in ("DONE", "ERR"):
                if time.monotonic() - t_post > limit:
                    return "STUCK", time.monotonic() - t_post
                time.sleep(0.002)
                state = agent.agent.check_xfer_state(h)
        except ERRS:
            state = "ERR"
        return state, time.monotonic() - t_post
    """
)

KILL_SCRIPT = PRELUDE + textwrap.dedent(
    """
    engine_pid, timeout_ms = int(sys.argv[2]), int(sys.argv[3])
    limit = timeout_ms / 1000 + 5
    a = daoskit.DaosAgent(params={"timeout_ms": timeout_ms, "num_queues": 2})
    size = 4 << 20
    data = daoskit.pattern(size)
    keys = [a.put(daoskit.unique_key("kill"), data) for _ in range(4)]
    names = [daoskit.unique_key("killq") for _ in range(3)]
    for n in names:
        a.put(n, data[:4096])
    bufs = [np.zeros(size, np.uint8) for _ in range(8)]
    for b in bufs:
        a.reg_dram(b)
    # In flight at the kill: 4 writes and 4 reads of 4 MiB, and a queryMem in another thread.
    posted = []
    for i, b in enumerate(bufs):
        op = "WRITE" if i % 2 == 0 else "READ"
        t = time.monotonic()
        h, st = a.post(op, [(addr(b), size, 0)], [(0, size, keys[i % 4])])
        posted.append((h, st, t))
    q = {}
    def query():
        t = time.monotonic()
        try:
            q["result"] = repr(a.query(names))
        except ERRS as e:
            q["result"] = "ERR"
        q["s"] = time.monotonic() - t
    qt = threading.Thread(target=query)
    qt.start()
    os.kill(engine_pid, signal.SIGKILL)
    t_kill = time.monotonic()
    during = [finish(a, h, st, t, limit) for h, st, t in posted]
    qt.join(limit)
    # Posted after the kill: must fail by their deadline.
    after = []
    for i in range(4):
        b = bufs[i]
        t = time.monotonic()
        h, st = a.post("READ", [(addr(b), size, 0)], [(0, size, keys[i])])
        after.append(finish(a, h, st, t, limit))
        posted.append((h, None, t))
    t = time.monotonic()
    try:
        qa = repr(a.query(names))
    except ERRS:
        qa = "ERR"
    q_after = ("ERR" if qa == "ERR" else qa, time.monotonic() - t)
    for h, _, _ in posted:
        a.release(h)
    t = time.monotonic()
    a.agent = None
    del a
    gc.collect()
    teardown_s = time.monotonic() - t
    # create_backend against the dead engine: refused in bounded time.
    t = time.monotonic()
    try:
        daoskit.DaosAgent(params={"timeout_ms": timeout_ms})
        create = "created"
    except ERRS:
        create = "refused"
    create_s = time.monotonic() - t
    # The same process, once the engine is back (a fresh format: the old keys are gone).
    restart()
    b = daoskit.DaosAgent(params={"timeout_ms": timeout_ms})
    dev = b.put(daoskit.unique_key("reborn"), data)
    fresh_ok = bool((b.get(dev, size) == data).all())
    b.close()
    print(json.dumps({"during": during, "query": q, "after": after, "query_after": q_after,
                      "teardown_s": teardown_s, "create": create, "create_s": create_s,
                      "fresh_ok": fresh_ok}))
    sys.stdout.flush()
    os._exit(0)  # DAOS's own teardown may still wait on the dead engine
    """
)


def test_engine_killed_under_load_fails_every_request_by_its_deadline(local_daos):
    local_daos.ensure()
    out = consumer(KILL_SCRIPT, local_daos.engine_pid(), TIMEOUT_MS, timeout=180)
    bound = TIMEOUT_MS / 1000 + 0.5
    for outcome, secs in out["during"]:
        # Done before the engine died, or failed by the deadline; never left hanging.
        assert outcome in ("DONE", "ERR") and secs <= bound, out
    for outcome, secs in out["after"]:
        assert outcome == "ERR" and secs <= bound, out
    assert out["query"].get("s", 1e9) <= bound, out
    assert out["query_after"][0] == "ERR" and out["query_after"][1] <= bound, out
    assert out["teardown_s"] < 3, out
    assert out["create"] == "refused" and out["create_s"] <= bound + 1, out
    assert out["fresh_ok"], out
    local_daos.dirty = False  # the consumer restarted it


AGENT_SCRIPT = PRELUDE + textwrap.dedent(
    """
    agent_pid, timeout_ms = int(sys.argv[2]), int(sys.argv[3])
    a = daoskit.DaosAgent(params={"timeout_ms": timeout_ms})
    size = 1 << 20
    data = daoskit.pattern(size)
    key = daoskit.unique_key("agent")
    dev = a.put(key, data)
    before = bool((a.get(dev, size) == data).all())
    os.kill(agent_pid, signal.SIGINT)
    for _ in range(200):
        if not os.path.exists(f"/proc/{agent_pid}"):
            break
        time.sleep(0.05)
    time.sleep(1)  # let the servers act on the agent's departure
    buf = np.zeros(size, np.uint8)
    a.reg_dram(buf)
    results = []
    for op in ("READ", "WRITE", "READ"):
        t = time.monotonic()
        try:
            h, st = a.post(op, [(addr(buf), size, 0)], [(0, size, dev)])
            outcome = finish(a, h, st, t, timeout_ms / 1000 + 5)
            a.release(h)
        except ERRS:
            outcome = ("ERR", time.monotonic() - t)
        results.append(outcome)
    t = time.monotonic()
    try:
        qa = repr(a.query([key]))
    except ERRS:
        qa = "ERR"
    query = (qa, time.monotonic() - t)
    t = time.monotonic()
    a.close()
    a.agent = None
    del a
    gc.collect()
    teardown_s = time.monotonic() - t
    t = time.monotonic()
    try:
        daoskit.DaosAgent(params={"timeout_ms": timeout_ms})
        create = "created"
    except ERRS:
        create = "refused"
    create_s = time.monotonic() - t
    print(json.dumps({"before": before, "results": results, "query": query, "teardown_s": teardown_s,
                      "create": create, "create_s": create_s}))
    sys.stdout.flush()
    os._exit(0)
    """
)


def test_agent_stopped_under_an_open_engine(local_daos):
    local_daos.ensure()
    out, err = consumer(AGENT_SCRIPT, local_daos.agent_pid(), TIMEOUT_MS, timeout=120, with_stderr=True)
    bound = TIMEOUT_MS / 1000 + 0.5
    assert out["before"], out
    # DAOS evicts the process's handles when its agent goes: every later call fails at once,
    # and the log says what happened and what to do.
    for outcome, secs in out["results"]:
        assert outcome in ("DONE", "ERR") and secs <= bound, out
    if any(o == "ERR" for o, _ in out["results"]):
        assert "DER_NO_HDL" in err and "daos_agent" in err, err[-3000:]
    assert out["query"][1] <= bound, out
    assert out["teardown_s"] < 3, out
    assert out["create"] == "refused" and out["create_s"] <= bound + 1, out


FULL_SCRIPT = PRELUDE + textwrap.dedent(
    """
    # A pool too small for what is written into it: writes fail with a message naming the pool and
    # what to do; once another container's space is freed, the same backend writes again.
    pool, daos_bin = sys.argv[2], sys.argv[3]
    import subprocess
    size = 8 << 20
    data = daoskit.pattern(size)
    filler = daoskit.DaosAgent(params={"pool": pool, "container": "filler", "create_container": "true"})
    kv = daoskit.DaosAgent(params={"pool": pool, "container": "kv", "create_container": "true"})
    kv.put(daoskit.unique_key("before"), data[:4096])
    filled, full_error = 0, None
    for i in range(200):
        try:
            filler.put(daoskit.unique_key("fill"), data)
            filled += 1
        except ERRS as e:
            full_error = type(e).__name__
            break
    try:
        kv.put(daoskit.unique_key("while-full"), data)
        kv_while_full = "written"
    except ERRS:
        kv_while_full = "refused"
    filler.close()
    filler.agent = None
    del filler
    gc.collect()
    freed = subprocess.run([daos_bin + "/daos", "cont", "destroy", "--force", pool, "filler"],
                           capture_output=True, text=True, timeout=120)
    after, t = "refused", time.monotonic()
    while time.monotonic() - t < 30:  # DAOS reclaims the space asynchronously
        try:
            dev = kv.put(daoskit.unique_key("after"), data)
            after = "written" if (kv.get(dev, size) == data).all() else "corrupt"
            break
        except ERRS:
            time.sleep(1)
    kv.close()
    print(json.dumps({"filled": filled, "full_error": full_error, "kv_while_full": kv_while_full,
                      "freed_rc": freed.returncode, "after": after}))
    sys.stdout.flush()
    os._exit(0)
    """
)


def test_full_pool_says_so_and_recovers_when_space_is_freed(local_daos):
    """On an engine restarted with a small pool (restarted as it was afterwards)."""
    local_daos.ensure(DAOS_LOCAL_POOL_SIZE="256MiB")
    pool = os.environ["DAOS_POOL"]
    out, err = consumer(FULL_SCRIPT, pool, os.environ["DAOS_LOCAL_BIN"], timeout=240, with_stderr=True)
    assert out["full_error"] == "nixlBackendError" and 0 < out["filled"] < 200, out
    line = next((l for l in err.splitlines() if "DER_NOSPACE" in l), "")
    assert f"pool={pool}" in line and "out of space" in line and "dmg pool extend" in line, err[-3000:]
    assert out["freed_rc"] == 0 and out["after"] == "written", out
