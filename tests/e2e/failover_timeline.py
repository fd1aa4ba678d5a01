# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The timeline of a failover run (tests/e2e/real_failover.py's JSON): per operation, the
requests that failed after the kill, the last failure, the longest request, and wrong bytes.
`python failover_timeline.py RESULT.json` prints it; the test and ci/failover.sh use summary()."""

import json
import sys


def summary(res: dict) -> dict:
    """Per operation, over the requests that ended after the kill and were posted before the
    engine was restarted (the reintegration is checked on its own)."""
    until = res.get("t_restart", float("inf"))
    recs = [r for r in res["records"] if r["t1"] >= 0 and r["t0"] < until]
    out: dict = {
        "excluded_s": min(res.get("excluded", {}).values(), default=None),
        "pool_excluded_s": res.get("pool_excluded"),
    }
    for op in ("READ", "WRITE"):
        mine = [r for r in recs if r["op"] == op]
        bad = [r for r in mine if r["out"] != "ok"]
        out[op] = {
            "requests": len(mine),
            "failed": len(bad),
            "wrong": sum(r["out"] == "WRONG" for r in mine),
            "stuck": sum(r["out"] == "STUCK" for r in mine),
            "last_failure_s": max((r["t1"] for r in bad), default=None),
            "longest_s": max((r["t1"] - r["t0"] for r in mine), default=0.0),
            "outcomes": sorted({r["out"] for r in mine}),
        }
    return out


def render(res: dict) -> str:
    s = summary(res)
    f = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    lines = [
        f"params {res.get('params')}; killed rank(s) {res.get('victims')}; excluded from the system at "
        f"{f(s['excluded_s'])} s, from the pool map at {f(s['pool_excluded_s'])} s"
    ]
    for op in ("READ", "WRITE"):
        o = s[op]
        lines.append(
            f"  {op:5}: {o['requests']} requests after the kill, {o['failed']} failed "
            f"(last ended at {f(o['last_failure_s'])} s), "
            f"longest {o['longest_s']:.1f} s, wrong {o['wrong']}, stuck {o['stuck']}, outcomes {o['outcomes']}"
        )
    if "join" in res:
        j = res["join"]
        e = j.get("early", {})
        lines.append(
            f"  agent started 3 s after the kill: {e.get('create')} in {f(e.get('create_s'))} s; reads {e.get('reads')}"
        )
        st = j.get("stale", {})
        lines.append(
            f"  agent started once the pool map excluded it ({f(j.get('t_excluded_join'))} s), daos_agent's cache "
            f"as it was: {st.get('create')} in {f(st.get('create_s'))} s; reads {st.get('reads')}"
        )
        lines.append(
            f"  agent started after refreshing daos_agent's cache ({f(j.get('t_refreshed_join'))} s): "
            f"{j.get('create')} in {f(j.get('create_s'))} s; reads {j.get('reads')}"
        )
    if "before_read_back" in res:
        b = res["before_read_back"]
        lines.append(f"  pre-kill keys all read right at {f(res['t_read_back'] - res['t_kill'])} s after the kill: {b}")
    if "failed_writes" in res:
        lines.append(f"  keys whose write failed, read back (a miss, never the refill): {res['failed_writes']}")
    if "after_reintegration" in res:
        lines.append(f"  after reintegration: {res['after_reintegration']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])))
