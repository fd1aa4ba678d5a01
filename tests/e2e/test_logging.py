"""What the plugin says, and at which level: each case runs in a subprocess so its stderr (where
the plugin logs through `tracing`) can be read, with NIXL_LOG_LEVEL set before the plugin loads."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent

SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import daoskit
    daoskit.prepare_environment()
    params = json.loads(sys.argv[2])
    for attempt in range(2):
        try:
            a = daoskit.DaosAgent(params=params)
            print("created", flush=True)
            a.close()
        except daoskit.backend_error() as e:
            print("refused", flush=True)
    """
)


def run(params: dict, level: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NIXL_LOG_LEVEL=level)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(HERE), json.dumps(params)],
        capture_output=True, text=True, timeout=60, env=env,
    )


def test_bad_value_log_names_parameter_value_and_what_is_accepted():
    p = run({"timeout_ms": "abc"}, "WARN")
    assert p.stdout.split() == ["refused", "refused"], p.stdout + p.stderr
    line = next((l for l in p.stderr.splitlines() if "timeout_ms" in l), "")
    assert '"abc"' in line and "integer" in line, p.stderr


def test_missing_libdaos_log_says_which_file_and_what_to_set():
    p = run({"daos_lib": "/nonexistent/libdaos.so.2"}, "WARN")
    assert p.stdout.split() == ["refused", "refused"], p.stdout + p.stderr
    assert "/nonexistent/libdaos.so.2" in p.stderr and "NIXL_DAOS_LIBDAOS" in p.stderr, p.stderr


def test_unknown_parameter_logged_once_and_ignored():
    p = run({"region": "us-east-1", "scheme": "https"}, "WARN")
    assert p.stdout.split() == ["created", "created"], p.stdout + p.stderr
    assert p.stderr.count('unknown parameters "region", "scheme"') == 1, p.stderr


def test_nixl_log_level_is_respected():
    quiet = run({"region": "us-east-1"}, "ERROR")
    assert quiet.stdout.split() == ["created", "created"], quiet.stdout + quiet.stderr
    assert "region" not in quiet.stderr, quiet.stderr
    chatty = run({}, "INFO")
    assert "DAOS backend ready" in chatty.stderr, chatty.stderr
    assert "DAOS backend ready" not in run({}, "WARN").stderr
