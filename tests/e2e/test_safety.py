"""Data safety whatever the caller does and whenever DAOS answers (issue 8): no late write into a
buffer after a NIXL call about it returned success, no false success, no crash at exit.

The scenarios that used to crash run in a subprocess so a SIGSEGV fails one test, not the suite."""

import json
import mmap
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from daoskit import addr, assert_same, nixl_errors, pattern, unique_key

KiB, MiB = 1 << 10, 1 << 20
HERE = Path(__file__).resolve().parent

PRELUDE = textwrap.dedent(
    """
    import json, mmap, sys, time
    sys.path.insert(0, sys.argv[1])
    import daoskit
    import numpy as np
    from daoskit import addr, pattern, unique_key
    daoskit.prepare_environment()
    sim = daoskit.Sim()
    """
)


def run_script(body: str, timeout: float = 60) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body), str(HERE)],
        capture_output=True, text=True, timeout=timeout,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    lines = [l for l in proc.stdout.strip().splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def test_release_in_flight_read_then_munmap():
    """Release right after posting a READ into an mmap'ed buffer, deregister, munmap: release must
    not return success while DAOS may still write the buffer (it waits for the fetch)."""
    out = run_script(
        """
        d = daoskit.DaosAgent(params={"timeout_ms": 10000})
        size = 1 << 20
        data = pattern(size, 1)
        dev = d.put(unique_key("rel"), data)
        sim.control("latency 300000")
        m = mmap.mmap(-1, size)
        buf = np.frombuffer(m, dtype=np.uint8)
        regs = d.agent.register_memory([(addr(buf), size, 0, "")], "DRAM", backends=["DAOS"])
        h, state = d.post("READ", [(addr(buf), size, 0)], [(0, size, dev)])
        t0 = time.monotonic()
        d.agent.release_xfer_handle(h)  # raises if the backend could not release it
        release_s = time.monotonic() - t0
        got = bytes(buf[:16])
        buf[:] = 0xAB
        time.sleep(0.5)
        untouched = int(np.count_nonzero(buf == 0xAB))
        d.agent.deregister_memory(regs, backends=["DAOS"])
        del buf
        m.close()  # munmap
        time.sleep(0.5)  # a late fetch would SIGSEGV here
        sim.control("latency 0")
        print(json.dumps({"state": state, "release_s": release_s, "untouched": untouched,
                          "read_ok": got == bytes(data[:16])}))
        """
    )
    assert out["state"] == "PROC", out
    assert out["untouched"] == 1 << 20, f"DAOS wrote a released buffer: {out}"
    assert out["read_ok"], "release waited for the fetch, so the buffer holds the key's bytes"


def test_release_in_flight_write_stores_what_was_posted(agent, sim):
    """A WRITE released in flight: once release returned, changing the buffer changes nothing."""
    size, key = 1 * MiB, unique_key("relw")
    old, new = pattern(size, 2), pattern(size, 3)
    dev = agent.put(key, old)
    buf = new.copy()
    agent.reg_dram(buf)
    sim.control("latency 300000")
    h, state = agent.post("WRITE", [(addr(buf), size, 0)], [(0, size, dev)])
    assert state == "PROC"
    agent.release(h)
    buf[:] = 0x5A  # what a late update would store
    time.sleep(0.5)
    sim.control("latency 0")
    assert_same(agent.get(dev, size), new, "key after a released write")


def test_exit_with_transfers_in_flight():
    """Interpreter exit while fetches are in flight (latency, not a hang): a clean exit."""
    run_script(
        """
        d = daoskit.DaosAgent(params={"timeout_ms": 10000, "num_queues": 2})
        size = 1 << 20
        dev = d.put(unique_key("exit"), pattern(size, 4))
        sim.control("latency 300000")
        bufs, handles = [], []
        for i in range(8):
            buf = np.zeros(size, np.uint8)
            d.reg_dram(buf)
            bufs.append(buf)
            handles.append(d.post("READ", [(addr(buf), size, 0)], [(0, size, dev)])[0])
        print(json.dumps({"posted": len(handles)}))
        sys.stdout.flush()
        # falls off the end: Python frees buffers, handles and the agent in its own order
        """
    )


def test_concurrent_posts_of_one_handle(sim):
    """Two threads post one handle at once (thread-safe agent): one gets REPOST_ACTIVE; release
    after that must still not return while the winner's I/O can write the buffer."""
    out = run_script(
        """
        import threading
        from nixl_cu12._api import nixl_thread_sync_t
        d = daoskit.DaosAgent(params={"timeout_ms": 10000}, sync_mode=nixl_thread_sync_t.NIXL_THREAD_SYNC_STRICT)
        size = 256 * 1024
        data = pattern(size, 5)
        dev = d.put(unique_key("twice"), data)
        sim.control("latency 200000")
        late = 0
        errors = []
        for round in range(4):
            buf = np.zeros(size, np.uint8)
            d.reg_dram(buf)
            h = d.agent.initialize_xfer("READ", d.agent.get_xfer_descs([(addr(buf), size, 0)], "DRAM"),
                                        d.agent.get_xfer_descs([(0, size, dev)], "OBJ"), d.name)
            gate = threading.Barrier(2)
            def go():
                gate.wait()
                try:
                    d.agent.transfer(h)
                except Exception as e:
                    errors.append(type(e).__name__)
            ts = [threading.Thread(target=go) for _ in range(2)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            try:
                d.agent.release_xfer_handle(h)
            except Exception as e:
                errors.append("release:" + type(e).__name__)
                continue
            buf[:] = 0xCD
            time.sleep(0.3)
            late += int(np.count_nonzero(buf != 0xCD))
        sim.control("latency 0")
        print(json.dumps({"late": late, "errors": errors}))
        """
    )
    assert out["late"] == 0, f"bytes written into released buffers: {out}"


def test_timed_out_write_cannot_overtake_a_later_write(make_agent, sim):
    """A WRITE past its deadline is still inside DAOS: reposting its handle is REPOST_ACTIVE, and a
    later write of that key that reports success is what the key holds afterwards."""
    from nixl_cu12._bindings import nixlBackendError

    agent = make_agent({"timeout_ms": 200})
    size, key = 256 * KiB, unique_key("zombie")
    first, second = pattern(size, 7), pattern(size, 8)
    dev = agent.put(key, pattern(size, 9))
    a, b = first.copy(), second.copy()
    agent.reg_dram(a)
    agent.reg_dram(b)
    sim.control("latency 1000000")  # 1 s: lands well after the 200 ms deadline
    h, state = agent.post("WRITE", [(addr(a), size, 0)], [(0, size, dev)])
    with pytest.raises(nixlBackendError):
        agent.wait(h, state, timeout=5)
    sim.control("latency 0")
    try:
        with pytest.raises(nixl_errors()):
            agent.agent.transfer(h)  # its RPC is still inside DAOS
        second_ok = True
        try:
            agent.xfer("WRITE", [(addr(b), size, 0)], [(0, size, dev)], timeout=5)
        except nixl_errors():
            second_ok = False
        time.sleep(1.3)  # the first write has landed by now
        got = agent.get(dev, size)
        if second_ok:
            assert_same(got, second, "key after a successful write that followed a timed-out one")
    finally:
        try:
            agent.release(h)
        except nixl_errors():
            pass


def test_prepped_obj_list_after_deregistration():
    """A prepped OBJ list outlives its registration: using it fails cleanly (no use after free)
    and never reaches another key that reused the freed memory."""
    out = run_script(
        """
        d = daoskit.DaosAgent()
        size = 4096
        dev = d.reg_obj(unique_key("gone"), size)
        src = pattern(size, 10)
        d.reg_dram(src)
        lh = d.prep_dram([(addr(src), size, 0)])
        rh = d.prep_obj([(0, size, dev)])
        d.dereg_obj(dev)
        others = [d.reg_obj(unique_key("other"), size) for _ in range(8)]
        try:
            d.prepped("WRITE", lh, [0], rh, [0], timeout=5)
            stale = "succeeded"
        except daoskit.nixl_errors() as e:
            stale = "failed"
        written = 0
        for o in others:
            try:
                d.get(o, size)
                written += 1
            except daoskit.nixl_errors():
                pass
        print(json.dumps({"stale": stale, "written": written}))
        """
    )
    assert out == {"stale": "failed", "written": 0}, out


def test_timed_out_queries_are_reaped(make_agent, sim):
    """queryMem past its deadline leaves its queries inside DAOS; the engine reaps them later."""
    agent = make_agent({"timeout_ms": 100})
    keys = [unique_key("q") for _ in range(1024)]
    base = sim.stats()["inflight"]
    sim.control("hang")
    for _ in range(5):
        with pytest.raises(nixl_errors()):
            agent.query(keys)
    assert sim.stats()["inflight"] - base >= 1024
    sim.control("resume")
    deadline = time.monotonic() + 10
    while sim.stats()["inflight"] > base and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sim.stats()["inflight"] <= base, sim.stats()


def test_max_inflight_is_engine_wide(make_agent, sim):
    agent = make_agent({"num_queues": 4, "max_inflight": 1})
    size = 4 * KiB
    devs = [agent.put(unique_key("cap"), pattern(size, i)) for i in range(8)]
    bufs = [np.zeros(size, np.uint8) for _ in devs]
    for b in bufs:
        agent.reg_dram(b)
    sim.control("latency 100000")
    base = sim.stats()["inflight"]
    handles = [agent.post("READ", [(addr(b), size, 0)], [(0, size, d)])[0] for b, d in zip(bufs, devs)]
    peak = 0
    t0 = time.monotonic()
    states = ["PROC"] * len(handles)
    while "PROC" in states and time.monotonic() - t0 < 20:
        peak = max(peak, sim.stats()["inflight"] - base)
        states = [agent.agent.check_xfer_state(h) for h in handles]
        time.sleep(0.01)
    sim.control("latency 0")
    for h in handles:
        agent.release(h)
    assert states == ["DONE"] * len(handles)
    assert peak == 1, f"{peak} RPCs in flight with max_inflight=1"
