"""The HTTP hot path, POST /v1/characters/{id}/tests, against the issue's baseline (issues 7, 16, 28).

    .venv/bin/python bench/bench_http.py [--db sqlite,postgres] [--characters 1,16] [--stacks uvloop,h11]
                                         [--rounds 3] [--duration 10]

For each server stack (`--stacks`; the reference is uvloop + httptools, what `python -m app serve`
runs; asyncio + h11 is the optional second table) and each database kind (a SQLite WAL file, then
PostgreSQL on 127.0.0.1:5432, user postgres) it starts two uvicorn servers on loopback with the
same settings (1 worker, that stack, proxy headers, access log off): our app (`app.main:app`,
migrated by `python -m app migrate`, no rate limit, no admin token) and `bench/baseline_app.py`.
For each count of characters (`--characters`: 1 is one hot row; 16 spreads the load, wrk picking one
at random per request) it creates through HTTP a great-cosmos campaign with them, then loads with
`wrk -t2 -c32 -d10s --latency`:
- ours:   POST /v1/characters/{id}/tests `{"stat":"force"}` with the GM's bearer
          token (secure RNG, no table dice): auth, validation, rules, log entry,
          versioned sheet update, event outbox, one commit;
- insert: POST /roll on the baseline (3d6, ORM add + commit + refresh);
- ping:   GET /ping on the baseline (a bare FastAPI route returning a constant).
Interleaved (the order rotates each round), 3 rounds. Reports the round-by-round req/s ratios
(issue 28 targets: ours ÷ insert ≥ 2.5×, ours ÷ ping ≥ 30%) and p99 latencies, one table per
stack. Without wrk (`apt-get install -y wrk`) it falls back to a bounded Python load generator
(httpx, threads; it tests the first character only) and says so: that generator is itself
CPU-bound on a 2-core machine, so its ratios understate ours ÷ ping. About 8 minutes per stack
with the defaults (2 with --db sqlite --characters 1).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import psycopg
from _common import REFERENCE_STACK, ROOT, STACK_NAMES, check_stack, machine, migrate, ratios, summary, table, verdict

PYTHON = sys.executable
HOST = "127.0.0.1"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
GC_SHEET = {
    "race": "humain",
    "level": 1,
    "stats": {"force": 68, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60},
    "intuition": 3,
    "karma": 0,
    "hp": 100,
    "hp_max": 100,
    "mp": 50,
    "mp_max": 50,
    "default_posture": "defensive",
}
UVICORN = [
    "-m",
    "uvicorn",
    "--host",
    HOST,
    "--workers",
    "1",
    "--proxy-headers",
    "--no-access-log",
    "--log-level",
    "warning",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@contextmanager
def server(
    args: list[str],
    env: dict[str, str],
    ready_path: str,
    log: Path,
    cwd: Path = ROOT,
    stack: str = REFERENCE_STACK,
    workers: int = 1,
    pid: list[int] | None = None,
) -> Iterator[str]:
    """A uvicorn process of ours on `stack` (stopped by its own pid at the end), and its base URL
    (its pid appended to `pid` when given)."""
    port = free_port()
    cmd = [PYTHON, *UVICORN, "--port", str(port), *check_stack(stack), *args]
    cmd[cmd.index("--workers") + 1] = str(workers)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://{HOST}:{port}"
    if pid is not None:
        pid.append(proc.pid)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def extract(commit: str, into: Path) -> str:
    """`commit`'s tree (git archive) in `into`; returns its short hash."""
    short = subprocess.run(
        ["git", "rev-parse", "--short", commit], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True, timeout=120).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return short


def pg_database(name: str) -> str:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://postgres@127.0.0.1:5432/{name}"


def pg_drop(name: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def setup_characters(base: str, count: int) -> tuple[list[str], str]:
    """A great-cosmos campaign and `count` characters, through the API; (character ids, GM token)."""
    with httpx.Client(base_url=base, timeout=10) as c:
        r = c.post("/v1/campaigns", json={"name": "Bench", "ruleset": "great-cosmos"})
        r.raise_for_status()
        camp = r.json()
        auth = {"Authorization": f"Bearer {camp['gm_token']}"}
        ids = []
        for i in range(count):
            r = c.post(
                f"/v1/campaigns/{camp['id']}/characters",
                headers=auth,
                json={"name": f"Bench hero {i}", "kind": "pc", "sheet": GC_SHEET},
            )
            r.raise_for_status()
            ids.append(r.json()["id"])
        r = c.post(f"/v1/characters/{ids[0]}/tests", headers=auth, json={"stat": "force"})
        assert r.status_code == 201 and r.json()["kind"] == "test", r.text
        return ids, camp["gm_token"]


LUA_POST = """wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
{auth}
{paths}
"""
LUA_PATHS = """local paths = {{{paths}}}
request = function()
  return wrk.format(nil, paths[math.random(#paths)])
end
"""


def lua(path: Path, body: str, token: str | None = None, paths: list[str] | None = None) -> Path:
    """A wrk script: POST `body` (with the bearer token), to a random one of `paths` when several."""
    auth = f'wrk.headers["Authorization"] = "Bearer {token}"' if token else ""
    spread = LUA_PATHS.format(paths=", ".join(f'"{p}"' for p in paths)) if paths and len(paths) > 1 else ""
    path.write_text(LUA_POST.format(body=body, auth=auth, paths=spread))
    return path


_UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def run_wrk(url: str, script: Path | None, threads: int, conns: int, duration: int) -> dict[str, float]:
    cmd = ["wrk", f"-t{threads}", f"-c{conns}", f"-d{duration}s", "--latency", "--timeout", "10s"]
    if script is not None:
        cmd += ["-s", str(script)]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, timeout=duration + 30).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "rps": rps,
        "p99_ms": float(p99.group(1)) * _UNIT[p99.group(2)],
        "non_2xx": int(bad.group(1)) if bad else 0,
        "socket_errors": sum(map(int, errors.groups())) if errors else 0,
    }


def run_python_load(
    url: str, method: str, body: str | None, token: str | None, conns: int, duration: int
) -> dict[str, float]:
    """Fallback when wrk is missing: `conns` threads, each with its own keep-alive client."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    latencies: list[float] = []
    bad = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + duration

    def worker() -> None:
        mine, nbad = [], 0
        with httpx.Client(timeout=10) as c:
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                r = c.request(method, url, content=body, headers=headers)
                mine.append((time.perf_counter() - t0) * 1e3)
                nbad += not 200 <= r.status_code < 400
        with lock:
            latencies.extend(mine)
            bad[0] += nbad

    workers = [threading.Thread(target=worker) for _ in range(conns)]
    t0 = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=duration + 30)
    elapsed = time.monotonic() - t0
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] if latencies else 0,
        "non_2xx": bad[0],
        "socket_errors": 0,
    }


def bench_db(kind: str, stack: str, args, work: Path) -> list[list[str]]:
    """Start both servers on one database kind and stack, and run the interleaved rounds for each
    count of characters."""
    tag = f"{kind}-{stack}"
    if kind == "sqlite":
        ours_url, base_url = f"sqlite:///{work / f'ours-{stack}.db'}", f"sqlite:///{work / f'base-{stack}.db'}"
        old_url = f"sqlite:///{work / f'old-{stack}.db'}"
    else:
        ours_url, base_url = pg_database("jdr_bench_http_ours"), pg_database("jdr_bench_http_base")
        old_url = pg_database("jdr_bench_http_old") if args.old else ""
    var_url = (
        (pg_database("jdr_bench_http_variant") if kind == "postgres" else f"sqlite:///{work / f'var-{stack}.db'}")
        if args.variant
        else ""
    )
    env = {"DATABASE_URL": ours_url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0", "CORS_ORIGINS": "[]"}
    old_env = {**env, "DATABASE_URL": old_url}
    var_env = {**env, "DATABASE_URL": var_url, **args.variant}
    for e in (env, var_env) if args.variant else (env,):
        migrate(e)
    rows = []
    with ExitStack() as stack_:
        if args.old:  # the older commit's own tree, its own database (migrated by it)
            migrate(old_env, args.old_tree)
            old = stack_.enter_context(
                server(
                    ["app.main:app"], old_env, "/v1/rulesets", work / f"old-{tag}.log", cwd=args.old_tree, stack=stack
                )
            )
        variant = (
            stack_.enter_context(
                server(["app.main:app"], var_env, "/v1/rulesets", work / f"variant-{tag}.log", stack=stack)
            )
            if args.variant
            else None
        )
        try:
            with (
                server(["app.main:app"], env, "/v1/rulesets", work / f"ours-{tag}.log", stack=stack) as ours,
                server(
                    ["--app-dir", "bench", "baseline_app:app"],
                    {"BENCH_DATABASE_URL": base_url},
                    "/ping",
                    work / f"base-{tag}.log",
                    stack=stack,
                ) as base,
            ):
                for characters in args.character_counts:
                    results = _rounds(kind, characters, args, work, ours, base, old if args.old else None, variant)
                    rows += _summary(kind, characters, results)
        finally:
            if kind == "postgres":
                pg_drop("jdr_bench_http_ours")
                pg_drop("jdr_bench_http_base")
                if args.old:
                    pg_drop("jdr_bench_http_old")
                if args.variant:
                    pg_drop("jdr_bench_http_variant")
    return rows


def _rounds(
    kind: str, characters: int, args, work: Path, ours: str, base: str, old: str | None, variant: str | None = None
) -> dict:
    char_ids, token = setup_characters(ours, characters)
    char_paths = [f"/v1/characters/{cid}/tests" for cid in char_ids]
    targets = {
        "ours": (f"{ours}{char_paths[0]}", "POST", '{"stat":"force"}', token),
        "insert": (f"{base}/roll", "POST", "{}", None),
        "ping": (f"{base}/ping", "GET", None, None),
    }
    paths = {"ours": char_paths}
    if old is not None:
        old_ids, old_token = setup_characters(old, characters)
        paths["old"] = [f"/v1/characters/{cid}/tests" for cid in old_ids]
        targets["old"] = (f"{old}{paths['old'][0]}", "POST", '{"stat":"force"}', old_token)
    if variant is not None:
        var_ids, var_token = setup_characters(variant, characters)
        paths["variant"] = [f"/v1/characters/{cid}/tests" for cid in var_ids]
        targets["variant"] = (f"{variant}{paths['variant'][0]}", "POST", '{"stat":"force"}', var_token)
    scripts = {
        name: lua(work / f"{name}-{characters}.lua", body, tok, paths.get(name)) if method == "POST" else None
        for name, (_u, method, body, tok) in targets.items()
    }

    def load(name: str, duration: int, conns: int) -> dict[str, float]:
        url, method, body, tok = targets[name]
        if args.python_load:
            return run_python_load(url, method, body, tok, conns, duration)
        return run_wrk(url, scripts[name], args.threads, conns, duration)

    for name in targets:  # warm-up: imports, connection pools, SQLite page cache
        load(name, 2, 4)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
    names = list(targets)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            res = load(name, args.duration, args.connections)
            results[name].append(res)
            print(
                f"  {kind} {characters:2d} char. round {r + 1} {name:6s} {res['rps']:8.1f} req/s"
                f"  p99 {res['p99_ms']:7.1f} ms  non-2xx {res['non_2xx']}  socket errors {res['socket_errors']}",
                flush=True,
            )
    return results


def _summary(kind: str, characters: int, results: dict) -> list[list[str]]:
    rps = {n: [x["rps"] for x in v] for n, v in results.items()}
    p99 = {n: [x["p99_ms"] for x in v] for n, v in results.items()}
    vs_insert, vs_ping = ratios(rps["ours"], rps["insert"]), ratios(rps["ours"], rps["ping"])
    bad = sum(x["non_2xx"] + x["socket_errors"] for v in results.values() for x in v)
    return [
        [
            kind,
            str(characters),
            f"{statistics.median(rps['ours']):.0f}",
            f"{statistics.median(rps['insert']):.0f}",
            f"{statistics.median(rps['ping']):.0f}",
            summary(vs_insert) + f"× ({verdict(statistics.median(vs_insert) >= TARGET_VS_INSERT)})",
            summary([100 * x for x in vs_ping], "{:.0f}")
            + f"% ({verdict(statistics.median(vs_ping) >= TARGET_VS_PING)})",
            " / ".join(f"{statistics.median(p99[n]):.0f}" for n in results),
            summary(ratios(rps["ours"], rps["old"])) + "×" if "old" in rps else "—",
            summary(ratios(rps["ours"], rps["variant"])) + "×" if "variant" in rps else "—",
            str(bad),
        ]
    ]


TARGET_VS_INSERT = 2.5  # issue 28 (issue 16 asked 1.5×, issue 7 1.0×)
TARGET_VS_PING = 0.30  # issue 28 (issue 16 asked 25%)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds per load run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument(
        "--characters",
        default="1,16",
        help="comma-separated counts of characters tested (wrk picks one at random per request; "
        "the Python fallback tests the first); 1 = one hot row",
    )
    ap.add_argument(
        "--stacks",
        default=REFERENCE_STACK,
        help="comma-separated server stacks, one table each: uvloop (uvloop + httptools, the production "
        "stack and the reference), h11 (asyncio + h11, the stack of rounds 1-2)",
    )
    ap.add_argument("--python-load", action="store_true", help="use the Python load generator even if wrk exists")
    ap.add_argument(
        "--old",
        default="",
        help="also load this commit's POST …/tests (its tree from git archive, "
        "its own database), in the same rounds: ours ÷ old",
    )
    ap.add_argument(
        "--variant",
        default="",
        help="KEY=VALUE[,KEY=VALUE…]: also this tree with these settings (its own database), in the same "
        "rounds: ours ÷ variant (e.g. EVENT_NOTIFY=false: what the notification triggers cost)",
    )
    args = ap.parse_args()
    args.character_counts = [int(c) for c in args.characters.split(",")]
    args.variant = dict(kv.split("=", 1) for kv in args.variant.split(",")) if args.variant else {}
    stacks = [st.strip() for st in args.stacks.split(",")]
    for st in stacks:
        check_stack(st)
    if not args.python_load and shutil.which("wrk") is None:
        print("wrk not found (apt-get install -y wrk): using the bounded Python load generator (httpx, threads)")
        args.python_load = True
    tool = "Python httpx threads" if args.python_load else f"wrk -t{args.threads}"
    print(
        f"bench_http — {machine()} — {tool} -c{args.connections} -d{args.duration}s, "
        f"{args.rounds} interleaved rounds, characters tested {args.characters}, median (min–max)\n"
    )
    tables: dict[str, list[list[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="jdr-bench-http-") as tmp:
        if args.old:
            args.old_tree = Path(tmp) / "old-tree"
            args.old_tree.mkdir()
            args.old = extract(args.old, args.old_tree)
            print(f"old: commit {args.old}\n")
        for st in stacks:
            print(f"stack: {STACK_NAMES[st]}", flush=True)
            tables[st] = []
            for kind in args.db.split(","):
                tables[st] += bench_db(kind.strip(), st, args, Path(tmp))
    for st, rows in tables.items():
        print(f"\n{STACK_NAMES[st]}, both sides:\n")
        print(
            table(
                [
                    "database",
                    "characters",
                    "ours req/s",
                    "insert req/s",
                    "ping req/s",
                    f"ours ÷ insert (≥ {TARGET_VS_INSERT}×)",
                    f"ours ÷ ping (≥ {TARGET_VS_PING:.0%})",
                    "p99 ms ours / insert / ping"
                    + (" / old" if args.old else "")
                    + (" / variant" if args.variant else ""),
                    f"ours ÷ old ({args.old})" if args.old else "ours ÷ old",
                    "ours ÷ variant ("
                    + (",".join(f"{k}={v}" for k, v in args.variant.items()) if args.variant else "none")
                    + ")",
                    "non-2xx + socket errors",
                ],
                rows,
            )
        )
    print(f"\nload average now: {os.getloadavg()[0]:.1f} (2-core machine)")
    print("req/s and p99 are medians of the rounds, indicative only; the ratios (same round) are the result.")


if __name__ == "__main__":
    main()
