# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Bad input through the real NIXL agent: every backend parameter given garbage, negative, huge
and odd values; keys that are empty, 1 MiB long, hold NUL or non-UTF-8 bytes or the plugin's
reserved bytes; descriptors of length 0, past u64::MAX, overlapping, of the wrong memory type;
devIds reused across keys. Each is a clean NIXL error (a typed exception, the process alive) or
is taken as documented, and the backend still moves bytes afterwards (a good write and read,
verified). What each input got is tallied and printed at the end (`pytest -s`).

Not repeated here: the named bad parameters of test_plugin.py, the devId/overlap refusals of
test_safety.py (test_another_key_on_a_live_devid_is_refused_not_misrouted)."""

import collections

import numpy as np
import pytest
from nixl_cu12._api import nixl_agent, nixl_agent_config

import daoskit
from daoskit import BACKEND, addr, assert_same, nixl_errors, pattern, plugin_params, unique_dev_id, unique_key

KiB, MiB = 1 << 10, 1 << 20

# What NIXL passes are strings (a C++ std::string, read by the plugin as a C string: a NUL ends
# it, so "\u00ff\u0000x" arrives as "\u00ff").
BAD_VALUES = [
    "-1",
    "1e99",
    "99999999999999999999999",
    "18446744073709551615",
    "",
    "\u00ff\u0000x",
    " 12 ",
    "garbage",
    "x" * 4096,
]
# A few more per parameter, near its edges.
EXTRA_VALUES = {
    "daos_lib": ["libc.so.6", "/"],
    "oclass": ["OC_NO_SUCH_CLASS", "SX\u2603"],
    "chunk_bytes": ["65535", "2147483648", "0x10000"],
    "stage_bytes": ["4194303", "1099511627777"],
    "num_queues": ["0", "65"],
    "evict_keep_free": ["91", "10.5"],
    "system": ["a" * 16],
}
# Parameters read as integers and as true/false: every one of these values must be refused
# (" 12 " is an integer where 12 is in range; "" is "not given" for read_timeout_ms).
NOT_INTEGERS = {"-1", "1e99", "99999999999999999999999", "18446744073709551615", "\u00ff\u0000x", "garbage", "x" * 4096}
NOT_BOOLS = set(BAD_VALUES) - {""}

TALLY: collections.Counter = collections.Counter()


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    total = sum(TALLY.values())
    print(f"\n{total} bad inputs through the NIXL agent:")
    for (group, outcome), n in sorted(TALLY.items()):
        print(f"  {group:<12} {outcome:<40} {n}")


@pytest.fixture(autouse=True)
def no_caught_panics(capfd):
    """A panic inside the plugin is caught at the C boundary and returned as NIXL_ERR_BACKEND,
    which would pass here for a clean refusal: the plugin's log must not name one."""
    yield
    err = capfd.readouterr().err
    assert "internal error in" not in err, [ln for ln in err.splitlines() if "internal error in" in ln][:5]


def errors():
    return nixl_errors()


def refused(group: str, call) -> BaseException:
    """Runs `call`, which must raise one of NIXL's typed errors; tallies and returns it."""
    try:
        call()
    except errors() as e:
        TALLY[group, f"refused: {type(e).__name__}"] += 1
        return e
    pytest.fail(f"{group}: accepted")


class Adopted(daoskit.DaosAgent):
    """A DaosAgent around an agent whose DAOS backend was created elsewhere."""

    def __init__(self, agent, name):
        self.agent, self.name = agent, name
        self._regs, self._obj_regs, self._keep = [], {}, []


def round_trip(agent: daoskit.DaosAgent, size: int = 96 * KiB, what: str = "good") -> None:
    """A good write and read of a fresh key, verified byte for byte."""
    data = pattern(size)
    dev = agent.put(unique_key("rt"), data)
    assert_same(agent.get(dev, size), data, f"a round trip after {what}")


def bare(prefix: str):
    name = unique_key(prefix)
    return name, nixl_agent(name, nixl_agent_config(backends=[]))


def test_every_parameter_given_garbage(sim):
    """Each parameter the plugin lists, alone with each bad value: refused (a typed error, the
    same agent then creates a good backend) or taken, and then the backend moves bytes."""
    names = sorted(plugin_params())
    assert {"pool", "container", "timeout_ms", "stage_bytes", "evict"} <= set(names), names
    defaults = plugin_params()
    name, agent = bare("params")
    took = []
    for param in names:
        for value in BAD_VALUES + EXTRA_VALUES.get(param, []):
            # Eviction off as in every daos-sim test (DaosAgent), unless it is the one tried.
            params = {"evict": "false", param: value}
            try:
                agent.create_backend(BACKEND, params)
            except errors() as e:
                TALLY["parameter", f"refused: {type(e).__name__}"] += 1
                assert BACKEND not in agent.backends
                continue
            TALLY["parameter", "taken, then a verified round trip"] += 1
            took.append((param, value))
            round_trip(Adopted(agent, name), what=f"{param}={value!r}")
            name, agent = bare("params")
    print("\nparameter values taken:", ", ".join(f"{p}={v[:20]!r}" for p, v in took))
    # The refused values include every non-integer of every integer parameter, and every
    # non-boolean of every true/false one.
    for param, value in took:
        default = defaults[param]
        if default.isdigit():
            assert value not in NOT_INTEGERS, (param, value)
            assert value != "" or param == "read_timeout_ms", (param, value)
        if default in ("true", "false"):
            assert value not in NOT_BOOLS, (param, value)
    # The agent that refused the last ones creates a good backend, which moves bytes.
    agent.create_backend(BACKEND, {"evict": "false"})
    round_trip(Adopted(agent, name), what="the refused parameters")


def test_odd_keys(agent):
    """Keys NIXL lets through: empty (the decimal devId), 1 MiB long, with NUL bytes, not UTF-8:
    each its own key, read back as written. Keys in the plugin's reserved space: refused at
    registration, answered absent by queryMem, and they never reach a chunk of another key."""
    size = 64 * KiB
    taken = {}
    dev = unique_dev_id()
    taken[str(dev)] = (agent.put("", pattern(size, 1), dev_id=dev), pattern(size, 1))
    # DAOS 2.8 takes a dkey of 1 MiB (the real engine stores and returns it whole).
    odd = ["k" * MiB, "a\0b", "a", "a\0", "\0", "\u00ff\u2603"]
    for i, key in enumerate(odd, start=2):
        taken[key] = (agent.put(key, pattern(size, i)), pattern(size, i))
    # Not UTF-8: bytes as metaInfo.
    raw = b"\xff\xfe\x00\x80"
    data = pattern(size, 9)
    agent.reg_dram(data)
    raw_dev = unique_dev_id()
    agent._regs.append(agent.agent.register_memory([(0, size, raw_dev, raw)], "OBJ", backends=[BACKEND]))
    agent.xfer("WRITE", [(addr(data), size, 0)], [(0, size, raw_dev)])
    assert_same(agent.get(raw_dev, size), data, "a key of non-UTF-8 bytes")
    TALLY["key", "taken as its bytes, read back"] += 1
    for key, (dev, want) in taken.items():
        assert_same(agent.get(dev, size), want, f"key of {len(key)} characters")
        TALLY["key", "taken as its bytes, read back"] += 1
    sizes = agent.query(list(taken))
    assert [s and int(s["size"]) for s in sizes] == [size] * len(taken)
    [found] = agent.agent.query_memory([(0, 0, 0, raw)], BACKEND, mem_type="OBJ")
    assert found is not None and int(found["size"]) == size
    # 1 MiB of key asked for but never written: absent.
    assert agent.query(["q" * MiB]) == [None]

    # The reserved space: a chunk of a real key (8 MiB in the default 4 MiB chunks has one).
    big = pattern(8 * MiB, 10)
    key = unique_key("chunked")
    agent.put(key, big)
    reserved = [
        f"{key}\0nixl-daos.chunk.1",
        f"{key}\0nixl-daos.",
        "\0nixl-daos.",
        "\0nixl-daos.chunk.0",
        f"x\0nixl-daos.chunk.1.{'9' * 40}",
    ]
    for k in reserved:
        e = refused(
            "reserved key",
            lambda k=k: agent.agent.register_memory([(0, 4 * MiB, unique_dev_id(), k)], "OBJ", backends=[BACKEND]),
        )
        assert "NIXL_ERR" in str(e)
    assert agent.query(reserved) == [None] * len(reserved)
    TALLY["reserved key", "queryMem: absent"] += len(reserved)
    assert int(agent.query([key])[0]["size"]) == 8 * MiB
    round_trip(agent, what="the odd keys")


def test_bad_descriptors(agent, sim):
    """Descriptors of length 0, past u64::MAX and DAOS's largest index, overlapping, mismatched,
    of unregistered devIds and of the wrong memory types: refused by NIXL or the plugin, or
    taken as documented; the key written before is untouched."""
    size = 64 * KiB
    before = pattern(size, 20)
    key = unique_key("desc")
    dev = agent.put(key, before)
    buf = pattern(2 * size, 21)
    agent.reg_dram(buf)
    unbounded = agent.reg_obj(unique_key("unbounded"), 0)  # no range limit in NIXL's agent

    # Length 0: nothing to move, done at once, the key unchanged.
    agent.xfer("WRITE", [(addr(buf), 0, 0)], [(0, 0, dev)])
    agent.xfer("READ", [(addr(buf), 0, 0)], [(0, 0, dev)])
    TALLY["descriptor", "length 0: done, nothing moved"] += 2
    assert_same(agent.get(dev, size), before, "the key after zero-length transfers")

    # Past u64::MAX and past DAOS's largest record index (i64::MAX): refused by the plugin.
    for offset, length in [(2**64 - 10, 100), (2**64 - 1, 1), (2**63, 100), (2**63 - 50, 100)]:
        for op in ("WRITE", "READ"):
            refused(
                "descriptor", lambda o=offset, n=length, op=op: agent.xfer(op, [(addr(buf), n, 0)], [(o, n, unbounded)])
            )
    # Just inside DAOS's index space: a value that large reads back (daos-sim stores it sparse).
    far = 2**62
    agent.xfer("WRITE", [(addr(buf), 4 * KiB, 0)], [(far, 4 * KiB, unbounded)])
    assert_same(agent.get(unbounded, 4 * KiB, offset=far), buf[: 4 * KiB], "4 KiB at offset 2^62")
    TALLY["descriptor", "offset 2^62: taken, read back"] += 1

    # Overlapping descriptors of one write: the later one wins where they overlap.
    ov = unique_key("overlap")
    ov_dev = agent.reg_obj(ov, 150)
    agent.xfer("WRITE", [(addr(buf), 100, 0), (addr(buf, 1000), 100, 0)], [(0, 100, ov_dev), (50, 100, ov_dev)])
    want = np.concatenate([buf[:50], buf[1000:1100]])
    assert_same(agent.get(ov_dev, 150), want, "overlapping descriptors")
    # Overlapping reads: each buffer gets the bytes.
    out = np.zeros(300, np.uint8)
    agent.reg_dram(out)
    agent.xfer("READ", [(addr(out), 150, 0), (addr(out, 150), 100, 0)], [(0, 150, ov_dev), (25, 100, ov_dev)])
    assert_same(out[:150], want, "first of two overlapping reads")
    assert_same(out[150:250], want[25:125], "second of two overlapping reads")
    TALLY["descriptor", "overlapping: taken, later write wins"] += 2

    # Refused by NIXL before the plugin: mismatched lengths or counts, unregistered devIds, DRAM
    # outside any registration.
    refused("descriptor", lambda: agent.xfer("WRITE", [(addr(buf), 100, 0)], [(0, 200, dev)]))
    refused("descriptor", lambda: agent.xfer("WRITE", [(addr(buf), 100, 0)] * 2, [(0, 100, dev)]))
    refused("descriptor", lambda: agent.xfer("WRITE", [(addr(buf), 100, 0)], [(0, 100, unique_dev_id())]))
    refused("descriptor", lambda: agent.xfer("WRITE", [(addr(buf), 10 * MiB, 0)], [(0, 10 * MiB, unbounded)]))
    refused("descriptor", lambda: agent.xfer("READ", [(addr(buf), 100, 0)], [(size, 100, dev)]))  # past the key's range

    # Wrong memory types: the plugin moves DRAM or VRAM <-> OBJ only; host memory is not VRAM, and FILE
    # is not registered.
    obj, dram = (
        agent.agent.get_xfer_descs([(0, 100, dev)], "OBJ"),
        agent.agent.get_xfer_descs([(addr(buf), 100, 0)], "DRAM"),
    )
    for local, remote in [(obj, obj), (dram, dram), (obj, dram)]:
        refused("memory type", lambda loc=local, rem=remote: agent.agent.initialize_xfer("WRITE", loc, rem, agent.name))
    for mem in ("VRAM", "FILE"):
        refused(
            "memory type", lambda m=mem: agent.agent.register_memory([(addr(buf), 100, 0, "")], m, backends=[BACKEND])
        )

    assert_same(agent.get(dev, size), before, "the key after the bad descriptors")
    round_trip(agent, what="the bad descriptors")


def test_devids_reused_across_keys(agent):
    """One devId for a key named by its metaInfo and for the decimal-devId key, or at the far end
    of the offsets: refused where the ranges overlap, never misrouted (test_safety.py covers two
    named keys). The decimal form of a devId is the same key as the empty metaInfo."""
    size = 4 * KiB
    dev = unique_dev_id()
    data = pattern(size, 30)
    agent.put("", data, dev_id=dev)  # the key str(dev)
    # The same key by its name on the same devId: allowed (one key), and reads what was written.
    same = agent.reg_obj(str(dev), size, dev)
    assert same == dev
    TALLY["devId", "same key again: taken"] += 1
    refused(
        "devId", lambda: agent.agent.register_memory([(0, size, dev, unique_key("other"))], "OBJ", backends=[BACKEND])
    )
    # Registrations at the end of the offsets (NIXL passes them unchecked): no overflow, and an
    # overlap there is refused as anywhere.
    far = unique_dev_id()
    agent.reg_obj(unique_key("far"), 0, far)  # [0, end of offsets)
    for start, length in [(2**64 - 5, 10), (2**64 - 1, 1), (2**63, 2**63)]:
        refused(
            "devId",
            lambda s=start, n=length: agent.agent.register_memory(
                [(s, n, far, unique_key("past"))], "OBJ", backends=[BACKEND]
            ),
        )
    assert_same(agent.get(dev, size), data, "the decimal-devId key")
    round_trip(agent, what="the reused devIds")


def test_dram_the_process_cannot_use_is_refused(agent):
    """A DRAM range at NULL, in no mapping or past the address space is refused when it is
    registered, not a crash of the process at its first copy (the plugin copies into and out of
    registered DRAM on its own threads). Read-only memory registers and is a WRITE's source; a
    READ into it is refused at prepXfer."""
    import mmap

    for start, length in [(0, 4096), (0x10000000000, 4096), (2**64 - 4096, 8192)]:
        refused(
            "DRAM",
            lambda s=start, n=length: agent.agent.register_memory([(s, n, 0, "")], "DRAM", backends=[BACKEND]),
        )
    size = 2 * 4096
    data = pattern(size, 40)
    ro = mmap.mmap(-1, size)
    ro.write(data.tobytes())
    ro_view = np.frombuffer(ro, np.uint8)
    start = addr(ro_view)
    assert ctypes_mprotect(start, size) == 0
    ro_reg = agent.agent.register_memory([(start, size, 0, "")], "DRAM", backends=[BACKEND])
    TALLY["DRAM", "read-only: registered"] += 1
    dev = agent.reg_obj(unique_key("from-read-only"), size)
    agent.xfer("WRITE", [(start, size, 0)], [(0, size, dev)])
    assert_same(agent.get(dev, size), data, "a WRITE from read-only memory")
    TALLY["DRAM", "read-only: a WRITE's source"] += 1
    refused("DRAM", lambda: agent.xfer("READ", [(start, size, 0)], [(0, size, dev)]))
    assert_same(ro_view, data, "the read-only memory")
    agent.agent.deregister_memory(ro_reg, backends=[BACKEND])
    del ro_view
    ro.close()
    round_trip(agent, what="the bad DRAM registrations")


def ctypes_mprotect(start: int, size: int) -> int:
    """mprotect(PROT_READ) of [start, start + size), page-aligned."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc.mprotect(start, size, mmap.PROT_READ)
