# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""vLLM's KV cache in DAOS through LMCache and the plugin, found again by the next server process.

Runs tests/vllm/serve.py processes on one model (tests/vllm/model.py) and one prompt set:

- `real`: the plugin as NIXL's OBJ backend on a real DAOS engine (DAOS_POOL and
  NIXL_DAOS_LIBDAOS from `daos-local.sh env`). Process A serves the stored prompts and exits;
  process B, started afterwards, serves them again (every chunk must be a hit read back from
  DAOS), the same prompts extended by new tokens (their stored prefix is a hit, only the tail
  is computed) and new prompts (recomputed). B's next token must equal A's (a full recompute)
  and its top-5 log-probabilities must agree within LOGPROB_TOL + LOGPROB_REL of their size.
- `sim`: the same on daos-sim, A's and B's prompts in one process (daos-sim lives in memory).
- `posix`: as `real`, through NIXL's POSIX backend on a tmpfs directory: the reference a user
  would compare the plugin with.
- `none`: no KV connector: vLLM's own recompute, for TTFT.

Prints one table (hits, prefill tokens computed, chunks stored and loaded by LMCache's counters
and by the plugin's own, TTFT p50/p90 hit against recompute) and writes it as JSON (--json).
Exits 1 when a check fails, naming it.

    python tests/vllm/e2e.py --modes sim,real,posix --prompts 10 --json out.json
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PLUGIN_SO = REPO / "target" / "release" / "libplugin_DAOS.so"
SIM_SO = REPO / "target" / "release" / "libdaos_sim.so"
sys.path.insert(0, str(HERE))
import model  # noqa: E402

CHUNK = 256
# 8 full chunks and a 52-token tail: the tail is never stored (save_unfull_chunk off), so a hit
# still computes it, as in the reference system's measurement.
PROMPT_TOKENS = 8 * CHUNK + 52
EXTEND_TOKENS = 300
VOCAB = model.CONFIG["vocab_size"]
# bf16 KV read back byte for byte, then attention over it as a prefix rather than in one pass:
# the top token must be the same, and each top-5 log-probability within LOGPROB_TOL plus
# LOGPROB_REL of its size (natural log units). bf16 logits of this model are quantized in steps
# of 0.125 around 8-16, and a hit may round a logit a step or two away from the recompute: a
# token at -6.884 recomputed came back at -7.009 (one step), one at -4.3756 at -4.1871 (1.5:
# the same on daos-sim, the real engine and NIXL POSIX, so the numerics', not the storage's).
# LOGPROB_TOL is two steps. Zeroed KV chunks handed over as hits (the sim-zeroed control)
# change the top token outright. Between storages, a hit's log-probabilities must be identical
# (the same KV bytes, the same computation): checked when one run has several (cross_check).
LOGPROB_TOL = 0.25
LOGPROB_REL = 0.03
# A next token other than the recompute's passes only as a near-tie: within this of it on the hit.
NEAR_TIE = 0.05


def prompt_set(n_stored: int, n_extended: int, n_new: int, seed: int) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    toks = lambda k: [rng.randrange(VOCAB) for _ in range(k)]  # noqa: E731
    stored = [{"name": f"p{i}", "ids": toks(PROMPT_TOKENS)} for i in range(n_stored)]
    extended = [{"name": f"e{i}", "ids": stored[i % n_stored]["ids"] + toks(EXTEND_TOKENS)} for i in range(n_extended)]
    new = [{"name": f"n{i}", "ids": toks(PROMPT_TOKENS)} for i in range(n_new)]
    return {"a": stored, "b": stored + extended + new}


def plugin_dir() -> str:
    """A directory holding our plugin as libplugin_OBJ.so (LMCache asks NIXL for OBJ)."""
    d = tempfile.mkdtemp(prefix="nixl-daos-as-obj-")
    os.symlink(PLUGIN_SO, os.path.join(d, "libplugin_OBJ.so"))
    return d


def split_cores(spec: str) -> tuple[list[int], list[int]] | None:
    """(vLLM's cores, the storage's cores) for --pin: `auto` gives a machine of n >= 2 cores'
    last core to the DAOS engine and the others to vLLM; `off` (or one core) pins nothing."""
    if spec == "off":
        return None
    cores = sorted(os.sched_getaffinity(0))
    if spec == "auto":
        return (cores[:-1], cores[-1:]) if len(cores) >= 2 else None
    vllm, storage = spec.split(":")
    parse = lambda t: [int(x) for x in t.split(",")]  # noqa: E731
    return parse(vllm), parse(storage)


def pin_storage(cores: list[int]) -> list[str]:
    """Moves every thread of the local DAOS server, engines and agent onto `cores`. A DAOS 2.8
    engine busy-polls about two cores for several seconds after each client RPC: beside vLLM on
    the same cores it slows vLLM's prefill several times over, hits and recomputes alike, so
    its TTFT would measure the contention, not the storage. Pinned, each gets cores of its own,
    as when storage runs on its own nodes. Returns what was pinned (pid:name)."""
    pinned = []
    for name in ("daos_engine", "daos_server", "daos_agent"):
        pids = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.split()
        for pid in pids:
            cpus = ",".join(map(str, cores))
            if subprocess.run(["taskset", "-a", "-p", "-c", cpus, pid], capture_output=True).returncode == 0:
                pinned.append(f"{pid}:{name}")
    return pinned


def run_serve(py: str, env: dict, args: list[str], prompts: list[dict], log: Path, timeout: int) -> dict:
    with tempfile.TemporaryDirectory() as t:
        pf, out = Path(t) / "prompts.json", log.with_suffix(".json")
        out.unlink(missing_ok=True)
        pf.write_text(json.dumps(prompts))
        t0 = time.monotonic()
        with open(log, "w") as lf:
            cores = env.get("E2E_VLLM_CORES")
            pin = ["taskset", "-c", cores] if cores else []
            rc = subprocess.run(
                [*pin, py, str(HERE / "serve.py"), "--prompts", str(pf), "--out", str(out), *args],
                env=env,
                stdout=lf,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            ).returncode
        if rc != 0 or not out.exists():
            tail = "".join(log.read_text().splitlines(keepends=True)[-40:])
            raise RuntimeError(f"serve.py {' '.join(args)} failed (rc {rc}); last lines of {log}:\n{tail}")
        res = json.loads(out.read_text())
        res["wall_s"] = time.monotonic() - t0
        return res


def read_totals(path: Path, pid: int) -> dict | None:
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        t = json.loads(line)
        if t.get("pid") == pid:
            return t
    return None


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


class Checks:
    def __init__(self, mode: str):
        self.mode, self.failed = mode, []

    def expect(self, ok: bool, what: str) -> None:
        if not ok:
            self.failed.append(f"{self.mode}: {what}")


def summarize(mode: str, a: dict | None, b: dict, totals_a, totals_b, prompts) -> tuple[dict, list[str]]:
    """Checks B against A (or, in one process, the repeats against the first serving)."""
    c = Checks(mode)
    by_name_a = {r["name"]: r for r in (a["results"] if a else [])}
    b_results = b["results"]
    if a is None:  # one process: its first len(prompts["a"]) results are A's
        n = len(prompts["a"])
        by_name_a = {r["name"]: r for r in b_results[:n]}
        b_results = b_results[n:]
    hits, recompute, worst_lp, hit_chunks, computed, ties = [], [], 0.0, 0, 0, 0
    for r in b_results:
        kind = r["name"][0]
        # vLLM's own count of the prompt tokens it did not compute (the connector's hit), not
        # LMCache's stats monitor: LMCache's stats logger thread clears the same counters every
        # few seconds, so a request's counts are sometimes lost (seen: 2 prompts of 12 read 0).
        got_hit = r["cached_tokens"]
        computed += r["prompt_tokens"] - r["cached_tokens"]
        if kind == "p":
            want = 8 * CHUNK
            c.expect(got_hit == want, f"{r['name']}: {got_hit} tokens came from the cache, expected all {want} stored")
            c.expect(
                r["prompt_tokens"] - r["cached_tokens"] == PROMPT_TOKENS - want,
                f"{r['name']}: computed {r['prompt_tokens'] - r['cached_tokens']} tokens, expected only the "
                f"{PROMPT_TOKENS - want}-token tail",
            )
            ref = by_name_a[r["name"]]
            # Every top-k token both report: the same log-probability within LOGPROB_TOL. The
            # next token must be the recompute's, unless the two are a near-tie on the hit too
            # (a random-weight model's distribution is nearly flat: its top two tokens can be
            # 0.01 apart, and attention over a loaded prefix rounds differently in bf16).
            shared = set(r["logprobs"]) & set(ref["logprobs"])
            c.expect(str(ref["token"]) in shared, f"{r['name']}: the recomputed token is not in the hit's top tokens")
            for t in shared:
                d = abs(r["logprobs"][t] - ref["logprobs"][t])
                worst_lp = max(worst_lp, d)
                c.expect(
                    d <= LOGPROB_TOL + LOGPROB_REL * abs(ref["logprobs"][t]),
                    f"{r['name']}: token {t}'s log-probability is {r['logprobs'][t]:.4f} on a hit, "
                    f"{ref['logprobs'][t]:.4f} recomputed",
                )
            if r["token"] != ref["token"] and str(ref["token"]) in r["logprobs"]:
                gap = r["logprobs"].get(str(r["token"]), 0.0) - r["logprobs"][str(ref["token"])]
                c.expect(
                    gap <= NEAR_TIE,
                    f"{r['name']}: next token {r['token']} on a hit, {ref['token']} recomputed "
                    f"({gap:.4f} apart on the hit)",
                )
                ties += 1
            elif r["token"] != ref["token"]:
                c.expect(False, f"{r['name']}: next token {r['token']} on a hit, {ref['token']} recomputed")
            hits.append(r["ttft_s"])
            hit_chunks += got_hit // CHUNK
        elif kind == "e":
            want = 8 * CHUNK
            c.expect(got_hit == want, f"{r['name']}: {got_hit} prefix tokens from the cache, expected {want}")
            hit_chunks += got_hit // CHUNK
        else:
            c.expect(got_hit == 0, f"{r['name']}: a new prompt found {got_hit} tokens in the cache")
            recompute.append(r["ttft_s"])
    if a is not None:
        recompute += [r["ttft_s"] for r in a["results"]]
    else:
        recompute += [r["ttft_s"] for r in by_name_a.values()]
    counts = [r["lmcache"] for r in (a["results"] if a else []) + b["results"]]
    counts += [x.get("warmup", {}) for x in (a, b) if x]
    lm_stored = sum(c.get("stored_tokens", 0) for c in counts) // CHUNK
    lm_loaded = sum(c.get("hit_tokens", 0) for c in counts) // CHUNK
    row = {
        "mode": mode,
        "hit_prompts": sum(1 for r in b_results if r["name"][0] == "p" and r["cached_tokens"] == 8 * CHUNK),
        "stored_prompts": len(prompts["a"]),
        "prefill_tokens_b": computed,
        "prompt_tokens_b": sum(r["prompt_tokens"] for r in b_results),
        "lmcache_chunks_stored": lm_stored,
        "lmcache_chunks_loaded": lm_loaded,
        "chunks_hit": hit_chunks,
        "ttft_hit_p50": pct(hits, 0.5),
        "ttft_hit_p90": pct(hits, 0.9),
        "ttft_recompute_p50": pct(recompute, 0.5),
        "ttft_recompute_p90": pct(recompute, 0.9),
        "max_logprob_diff": worst_lp,
        "near_ties": ties,
        "startup_s": b["startup_s"],
    }
    if totals_b is not None or totals_a is not None:
        wa, ra = (totals_a or {}).get("writes", {}), (totals_a or {}).get("reads", {})
        wb, rb = (totals_b or {}).get("writes", {}), (totals_b or {}).get("reads", {})
        row.update(
            plugin_keys_written=wa.get("keys", 0) + wb.get("keys", 0),
            plugin_keys_read=ra.get("keys", 0) + rb.get("keys", 0),
            plugin_read_bytes=rb.get("bytes", 0),
            # A read of a key that does not exist is a miss, not a failure (LMCache asks first).
            plugin_failed=sum(d.get("failed", 0) - d.get("missing", 0) for d in (wa, ra, wb, rb)),
        )
        # What the plugin must have moved, from the prompt set alone: a warm-up chunk per
        # process (B's is the same tokens as A's: a hit; one process stores it once), 8 chunks
        # per stored prompt, then B reads them back (8 per repeat and per extension), stores the
        # extensions' one new full chunk and the new prompts' 8. None may fail.
        n_p = sum(1 for r in b_results if r["name"][0] == "p")
        n_e = sum(1 for r in b_results if r["name"][0] == "e")
        n_n = sum(1 for r in b_results if r["name"][0] == "n")
        want_written = 1 + 8 * len(prompts["a"]) + n_e + 8 * n_n
        want_read = (0 if a is None else 1) + 8 * (n_p + n_e)
        read, written = ra.get("keys", 0) + rb.get("keys", 0), row["plugin_keys_written"]
        c.expect(read == want_read, f"the plugin read {read} keys; the prompts need {want_read}")
        c.expect(written == want_written, f"the plugin wrote {written} keys; the prompts store {want_written}")
        c.expect(
            read == hit_chunks + (0 if a is None else 1), f"the plugin read {read} keys; vLLM got {hit_chunks} chunks"
        )
        c.expect(row["plugin_failed"] == 0, f"{row['plugin_failed']} plugin requests failed")
    return row, c.failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--modes",
        default="sim",
        help="comma-separated: sim, real, posix, none, and sim-zeroed (the negative control: every "
        "loaded chunk zeroed, the checks must fail)",
    )
    ap.add_argument("--prompts", type=int, default=4, help="stored prompts (B also serves as many extended, and new)")
    ap.add_argument("--python", default=sys.executable, help="the vLLM venv's python (ci/vllm.sh)")
    ap.add_argument("--overlay", required=True, help="LMCache patched with upstream/lmcache (PYTHONPATH)")
    ap.add_argument("--json", help="write the table here")
    ap.add_argument("--logs", default=None, help="directory for the processes' logs")
    ap.add_argument("--timeout", type=int, default=900, help="per process, seconds")
    ap.add_argument(
        "--obj-tier",
        action="store_true",
        help="also start vLLM with its own OBJ tier (kv_offload TieringOffloadingSpec, type obj) on the plugin "
        "over daos-sim, and report whether vLLM's platform enables it (tests/vllm/obj_tier.py)",
    )
    ap.add_argument(
        "--reference",
        help="the --json of an earlier run of the same prompts and model (another storage): its hits' "
        "log-probabilities must equal this run's",
    )
    ap.add_argument(
        "--pin",
        default="auto",
        help="cores for vLLM and for the local DAOS engine, VLLM:STORAGE (e.g. 0:1), `auto` (the last core to "
        "the engine, the others to vLLM, every mode alike) or `off`",
    )
    args = ap.parse_args()

    logs = Path(args.logs or tempfile.mkdtemp(prefix="vllm-e2e-"))
    logs.mkdir(parents=True, exist_ok=True)
    mdir = str(model.model_dir())
    n = args.prompts
    prompts = prompt_set(n, max(1, n // 2), max(1, n // 2), seed=1234)
    base = dict(
        os.environ,
        PYTHONHASHSEED="0",
        PYTHONPATH=args.overlay + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
        LMCACHE_LOG_LEVEL=os.environ.get("LMCACHE_LOG_LEVEL", "WARNING"),
        NIXL_PLUGIN_DIR=plugin_dir(),
    )
    split = split_cores(args.pin)
    if split:
        vllm_cores, storage_cores = split
        # Every mode alike, so that their TTFTs compare; vLLM's OpenMP threads on its cores.
        base["E2E_VLLM_CORES"] = ",".join(map(str, vllm_cores))
        base["VLLM_CPU_OMP_THREADS_BIND"] = base["E2E_VLLM_CORES"]
        print(f"pinning: vLLM on cores {base['E2E_VLLM_CORES']}, a local DAOS engine on {storage_cores}", flush=True)
    rows, failures, hit_logprobs = [], [], {}
    for mode in args.modes.split(","):
        env = dict(base)
        stats = logs / f"{mode}-totals.jsonl"
        stats.unlink(missing_ok=True)
        env["NIXL_DAOS_STATS_FILE"] = str(stats)
        common = ["--model", mdir]
        if mode in ("sim", "sim-zeroed"):
            env.update(NIXL_DAOS_LIBDAOS=str(SIM_SO), DAOS_POOL="sim")
            env.pop("DAOS_CONT", None)
            common += ["--storage", "daos", "--bucket", f"vllm-{uuid.uuid4().hex[:8]}"]
            if mode == "sim-zeroed":
                common.append("--zero-loads")
        elif mode == "real":
            missing = [v for v in ("DAOS_POOL", "NIXL_DAOS_LIBDAOS") if not env.get(v)]
            if missing:
                print(f'SKIP real: {" and ".join(missing)} not set (eval "$(daos-local.sh env)")')
                continue
            common += ["--storage", "daos", "--bucket", f"vllm-{uuid.uuid4().hex[:8]}"]
            if split:
                pinned = pin_storage(split[1])
                print(f"real: pinned {' '.join(pinned) or 'nothing (no local DAOS processes)'}", flush=True)
        elif mode == "posix":
            d = tempfile.mkdtemp(prefix="vllm-posix-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            common += ["--storage", "posix", "--posix-dir", d]
            # NIXL's own plugin directory (the wheel's, which has POSIX), not ours.
            env.pop("NIXL_PLUGIN_DIR", None)
        else:
            common += ["--storage", "none"]
        t0 = time.monotonic()
        if mode.startswith("sim"):
            a = None
            b = run_serve(args.python, env, common, prompts["a"] + prompts["b"], logs / f"{mode}.log", args.timeout)
            ta, tb = None, read_totals(stats, b["pid"])
        else:
            try:
                a = run_serve(args.python, env, common, prompts["a"], logs / f"{mode}-a.log", args.timeout)
                b = run_serve(args.python, env, common, prompts["b"], logs / f"{mode}-b.log", args.timeout)
            finally:
                if mode == "real" and split:
                    # The engine may serve other tests after this one (ci/test.sh's real pass).
                    pin_storage(sorted(os.sched_getaffinity(0)))
            ta, tb = read_totals(stats, a["pid"]), read_totals(stats, b["pid"])
        if mode == "none":
            rec = [r["ttft_s"] for r in (a["results"] + b["results"])]
            row = {"mode": mode, "ttft_recompute_p50": pct(rec, 0.5), "ttft_recompute_p90": pct(rec, 0.9)}
            fails = []
        else:
            if mode != "posix" and (tb is None or (a is not None and ta is None)):
                failures.append(f"{mode}: the plugin wrote no totals to {stats}")
            row, fails = summarize(mode, a, b, ta, tb, prompts)
        if mode == "sim-zeroed":
            # The negative control: zeroed KV handed over as hits must fail the model checks.
            caught = [f for f in fails if "log-probability" in f or "next token" in f or "top tokens" in f]
            print(f"negative control (zeroed loads): {len(caught)} check(s) failed, as they must:", flush=True)
            for f in caught:
                print(f"  {f}", flush=True)
            fails = [] if caught else [f"{mode}: zeroed KV chunks passed every check: the checks cannot fail"]
        if mode in ("real", "sim", "posix"):
            hit_logprobs[mode] = {r["name"]: r["logprobs"] for r in b["results"] if r["cached_tokens"] > 0}
        row["wall_s"] = time.monotonic() - t0
        rows.append(row)
        failures += fails
        print(json.dumps(row), flush=True)

    obj_tier = None
    if args.obj_tier:
        env = dict(base, NIXL_DAOS_LIBDAOS=str(SIM_SO), DAOS_POOL="sim")
        env.pop("DAOS_CONT", None)
        log = logs / "obj-tier.log"
        cores = env.get("E2E_VLLM_CORES")
        cmd = [*(["taskset", "-c", cores] if cores else []), args.python, str(HERE / "obj_tier.py"), "--model", mdir]
        with open(log, "w") as lf:
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=lf, text=True, timeout=args.timeout)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        obj_tier = json.loads(lines[-1]) if lines else {"enabled": None, "error": f"no report (rc {p.returncode})"}
        if obj_tier.get("enabled"):
            print(f"vLLM's OBJ tier on the plugin: enabled; {json.dumps(obj_tier)}", flush=True)
        else:
            print(
                f"vLLM's OBJ tier on the plugin: not enabled here, stopped at {obj_tier.get('stage')}: "
                f"{obj_tier.get('error')} ({obj_tier.get('where')}); log: {log}",
                flush=True,
            )
    if args.reference:
        ref = json.loads(Path(args.reference).read_text()).get("hit_logprobs", {})
        if not ref:
            failures.append(f"--reference {args.reference}: it holds no hits to compare with")
        for m, hits in ref.items():
            hit_logprobs.setdefault(f"{m} (reference)", hits)
    failures += cross_check(hit_logprobs)
    print_table(rows)
    if args.json:
        own = {m: h for m, h in hit_logprobs.items() if not m.endswith("(reference)")}
        out = {"rows": rows, "failures": failures, "logs": str(logs), "hit_logprobs": own, "pin": args.pin}
        out["obj_tier"] = obj_tier
        Path(args.json).write_text(json.dumps(out, indent=1))
    for f in failures:
        print(f"FAILED: {f}")
    print(f"logs: {logs}")
    return 1 if failures else 0


def cross_check(hit_logprobs: dict[str, dict[str, dict]]) -> list[str]:
    """Storages against each other: the same prompts' hits carry the same KV bytes into the same
    computation, so their top log-probabilities must be identical, not merely close."""
    fails, modes = [], sorted(hit_logprobs)
    for m in modes[1:]:
        ref, got = hit_logprobs[modes[0]], hit_logprobs[m]
        for name in sorted(set(ref) & set(got)):
            if ref[name] != got[name]:
                fails.append(f"{m}: {name}'s hit log-probabilities {got[name]} differ from {modes[0]}'s {ref[name]}")
        print(f"cross-check {m} vs {modes[0]}: {len(set(ref) & set(got))} hits compared", flush=True)
    return fails


def print_table(rows: list[dict]) -> None:
    f = lambda v: "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
    cols = [
        ("mode", "mode"),
        ("hits", lambda r: f"{r.get('hit_prompts', '-')}/{r.get('stored_prompts', '-')}"),
        ("prefill B", lambda r: f"{r.get('prefill_tokens_b', '-')}/{r.get('prompt_tokens_b', '-')}"),
        ("chunks hit", lambda r: f"{r.get('chunks_hit', '-')}"),
        (
            "LMC stats stored/loaded",
            lambda r: f"{r.get('lmcache_chunks_stored', '-')}/{r.get('lmcache_chunks_loaded', '-')}",
        ),
        ("plugin written/read", lambda r: f"{r.get('plugin_keys_written', '-')}/{r.get('plugin_keys_read', '-')}"),
        ("TTFT hit p50/p90 s", lambda r: f"{f(r.get('ttft_hit_p50'))}/{f(r.get('ttft_hit_p90'))}"),
        ("recompute p50/p90 s", lambda r: f"{f(r.get('ttft_recompute_p50'))}/{f(r.get('ttft_recompute_p90'))}"),
        ("max dlogp", lambda r: f(r.get("max_logprob_diff"))),
    ]
    cells = [[name for name, _ in cols]] + [[(g(r) if callable(g) else f(r.get(g))) for _, g in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))


if __name__ == "__main__":
    sys.exit(main())
