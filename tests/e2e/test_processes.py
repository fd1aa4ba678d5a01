"""Keys outlive the process that wrote them: writers and readers in separate processes, as when a
serving process restarts or several workers share one cache. Real DAOS only: daos-sim keeps its
data in the memory of the process that loaded it."""

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import daoskit

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(
    not daoskit.TESTBED, reason="daos-sim keeps data in one process's memory (runs against real DAOS)"
)

# argv: tests dir, key prefix, number of keys, bytes per key, seed of the first key.
WRITER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import daoskit
    prefix, n, size, seed = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    a = daoskit.DaosAgent()
    for i in range(n):
        a.put(f"{prefix}-{i}", daoskit.pattern(size, seed + i))
    a.close()
    print(json.dumps({"written": n}))
    """
)

# argv: tests dir, then JSON list of [prefix, n, size, seed].
READER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import daoskit
    sets = json.loads(sys.argv[2])
    a = daoskit.DaosAgent()
    bad, sizes, keys = [], [], []
    for prefix, n, size, seed in sets:
        for i in range(n):
            key = f"{prefix}-{i}"
            keys.append((key, size))
            got = a.get(a.reg_obj(key, size), size)
            if not (got == daoskit.pattern(size, seed + i)).all():
                bad.append(key)
    res = a.query([k for k, _ in keys] + [daoskit.unique_key("never")])
    sizes = [None if r is None else int(r["size"]) for r in res]
    a.close()
    print(json.dumps({"bad": bad, "sizes": sizes, "want": [s for _, s in keys] + [None]}))
    """
)


def run(script: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, str(HERE), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(p: subprocess.Popen, timeout: float = 120) -> dict:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\n{out[-2000:]}\n{err[-4000:]}"
    return json.loads(out.strip().splitlines()[-1])


def test_a_later_process_reads_what_an_exited_one_wrote():
    prefix, n, size = f"xproc-{uuid.uuid4().hex}", 6, 300_001
    assert result(run(WRITER, prefix, n, size, 100)) == {"written": n}
    out = result(run(READER, json.dumps([[prefix, n, size, 100]])))
    assert out["bad"] == [], out
    assert out["sizes"] == out["want"], out


def test_two_writers_at_once_and_a_third_reads_both():
    a, b = f"xa-{uuid.uuid4().hex}", f"xb-{uuid.uuid4().hex}"
    wa, wb = run(WRITER, a, 8, 64 * 1024, 1), run(WRITER, b, 8, 96 * 1024, 50)
    assert result(wa) == {"written": 8} and result(wb) == {"written": 8}
    out = result(run(READER, json.dumps([[a, 8, 64 * 1024, 1], [b, 8, 96 * 1024, 50]])))
    assert out["bad"] == [], out
    assert out["sizes"] == out["want"], out
