"""Server CPU per request across worker counts on one database (issue 28 item 4).

    .venv/bin/python bench/bench_workers.py [--db postgres|sqlite] [--workers 1,2,4] [--instances]
                                            [--rounds 2] [--duration 8] [--characters 16]

One database (PostgreSQL `jdr_bench_workers` on 127.0.0.1:5432, created and dropped here, or a
SQLite WAL file), a great-cosmos campaign with `--characters` characters made once. Then, round
after round (the order rotates), for each contender: a server of N workers (uvloop + httptools,
what `python -m app serve --workers N` runs), or with `--instances` also two servers of one worker
on two ports ("2 instances", each loaded by its own wrk with half the connections), loaded with
POST …/tests spread over the characters (wrk -t2 -c32). The CPU of the server's processes (the
uvicorn supervisor and its workers) and of the database's backends serving it is read from
/proc before and after (user + system), so the 2-core machine's own contention, which lowers
req/s, does not hide what a request costs: CPU ms per request, and N ÷ 1 worker's (target
≤ 1.15×). Errors (non-2xx, socket errors) are counted. About 3 minutes with the defaults.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from contextlib import ExitStack, suppress
from pathlib import Path

import _common  # noqa: F401 (puts the repository on sys.path)
import psycopg
from _common import ROOT, cpu_seconds, machine, migrate, process_tree, summary, table, tree_cpu_seconds
from bench_http import extract, lua, pg_database, pg_drop, run_python_load, run_wrk, server, setup_characters

PYTHON = sys.executable
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
NAME = "jdr_bench_workers"
TARGET = 1.15


def backends(name: str) -> dict[int, float]:
    """CPU seconds of each client backend of database `name` (PostgreSQL runs on this machine)."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        pids = [
            r[0]
            for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'", (name,)
            )
        ]
    out = {}
    for pid in pids:
        with suppress(OSError, ValueError, IndexError):
            out[pid] = cpu_seconds(pid)
    return out


def measure(
    kind: str, db: str, bases: list[str], pids: list[int], paths: list[str], token: str, args, work: Path
) -> dict:
    """Load every server at once (the connections shared out), the CPU it cost."""
    conns = max(1, args.connections // len(bases))
    tree = [p for pid in pids for p in process_tree(pid)]
    app0, db0 = tree_cpu_seconds(tree), backends(db) if kind == "postgres" else {}
    results: list[dict[str, float]] = [{} for _ in bases]

    def one(i: int, base: str) -> None:
        if args.python_load:
            results[i] = run_python_load(f"{base}{paths[0]}", "POST", '{"stat":"force"}', token, conns, args.duration)
        else:
            script = lua(work / f"w{i}.lua", '{"stat":"force"}', token, paths)
            if args.rate:  # each connection waits its share of the rate between its requests
                think_ms = 1000 * args.connections / args.rate
                with script.open("a") as f:
                    f.write(f"delay = function()\n  return {think_ms:.1f} * (0.5 + math.random())\nend\n")
            results[i] = run_wrk(f"{base}{paths[0]}", script, args.threads, conns, args.duration)

    threads = [threading.Thread(target=one, args=(i, b)) for i, b in enumerate(bases)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tree = [p for pid in pids for p in process_tree(pid)]  # a worker restarted meanwhile is counted from 0
    app_cpu = tree_cpu_seconds(tree) - app0
    db_cpu = sum(cpu - db0.get(pid, 0.0) for pid, cpu in backends(db).items()) if kind == "postgres" else 0.0
    rps = sum(r["rps"] for r in results)
    requests = rps * args.duration
    return {
        "rps": rps,
        "app_ms": 1000 * app_cpu / max(requests, 1),
        "db_ms": 1000 * db_cpu / max(requests, 1),
        "p99_ms": max(r["p99_ms"] for r in results),
        "errors": sum(r["non_2xx"] + r["socket_errors"] for r in results),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=("postgres", "sqlite"), default="postgres")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--instances", action="store_true", help="also two servers of one worker on two ports")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--characters", type=int, default=16)
    ap.add_argument("--python-load", action="store_true")
    ap.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="req/s for all the servers together, below what one worker serves (wrk's delay(): every "
        "connection waits its share between requests): the same work for every worker count, no server "
        "saturated; 0 = as fast as they answer (the default)",
    )
    ap.add_argument(
        "--old", default="", help="also this commit's tree (git archive, its own database), each worker count"
    )
    args = ap.parse_args()
    if not args.python_load and shutil.which("wrk") is None:
        print("wrk not found (apt-get install -y wrk): using the bounded Python load generator")
        args.python_load = True
    if args.rate and args.python_load:
        ap.error("--rate needs wrk")
    trees = ["new", "old"] if args.old else ["new"]
    contenders: dict[str, tuple[str, list[int]]] = {}
    for tree in trees:
        suffix = f" ({tree})" if args.old else ""
        for n in map(int, args.workers.split(",")):
            contenders[f"{n} worker{'s' if n > 1 else ''}{suffix}"] = (tree, [n])
        if args.instances:
            contenders[f"2 instances{suffix}"] = (tree, [1, 1])
    print(
        f"bench_workers: {machine()}, {args.db}, {args.characters} characters, wrk -c{args.connections} "
        f"-d{args.duration}s, {args.rounds} rounds, "
        f"{f'{args.rate:g} req/s in all' if args.rate else 'as fast as served'}; CPU from /proc",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="jdr-bench-workers-") as tmp:
        work = Path(tmp)
        where = {"new": ROOT}
        if args.old:
            where["old"] = work / "old-tree"
            where["old"].mkdir()
            print(f"old: commit {extract(args.old, where['old'])}", flush=True)
        dbs = {tree: NAME + ("" if tree == "new" else "_old") for tree in trees}
        envs = {}
        for tree in trees:
            url = pg_database(dbs[tree]) if args.db == "postgres" else f"sqlite:///{work / f'{tree}.db'}"
            envs[tree] = {
                "DATABASE_URL": url,
                "ADMIN_TOKEN": "",
                "RATE_LIMIT_PER_MINUTE": "0",
                "CAMPAIGNS_PER_HOUR_PER_ADDRESS": "0",
            }
        results: dict[str, list[dict]] = {name: [] for name in contenders}
        try:
            for tree in trees:
                migrate(envs[tree], where[tree], timeout=None)
            made: dict[str, tuple[list[str], str]] = {}
            names = list(contenders)
            for r in range(args.rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    tree, counts = contenders[name]
                    with ExitStack() as stack:
                        pids: list[int] = []
                        bases = [
                            stack.enter_context(
                                server(
                                    ["app.main:app"],
                                    envs[tree],
                                    "/readyz",
                                    work / f"{name}-{r}-{i}.log",
                                    cwd=where[tree],
                                    workers=n,
                                    pid=pids,
                                )
                            )
                            for i, n in enumerate(counts)
                        ]
                        if tree not in made:
                            made[tree] = setup_characters(bases[0], args.characters)
                        ids, token = made[tree]
                        paths = [f"/v1/characters/{cid}/tests" for cid in ids]
                        for base in bases:  # warm-up: every worker's imports and pools
                            if args.python_load:
                                run_python_load(f"{base}{paths[0]}", "POST", '{"stat":"force"}', token, 8, 2)
                            else:
                                run_wrk(
                                    f"{base}{paths[0]}",
                                    lua(work / "warm.lua", '{"stat":"force"}', token, paths),
                                    2,
                                    16,
                                    3,
                                )
                        res = measure(args.db, dbs[tree], bases, pids, paths, token, args, work)
                    results[name].append(res)
                    print(
                        f"  round {r + 1} {name:18s} {res['rps']:7.1f} req/s  app CPU {res['app_ms']:.2f} ms/req  "
                        f"db CPU {res['db_ms']:.2f} ms/req  p99 {res['p99_ms']:.0f} ms  errors {res['errors']}",
                        flush=True,
                    )
        finally:
            if args.db == "postgres":
                for db in dbs.values():
                    pg_drop(db)
    firsts = {tree: next(n for n in names if contenders[n][0] == tree) for tree in trees}
    rows = []
    for name in names:
        first = firsts[contenders[name][0]]  # each tree against its own first contender
        app = [x["app_ms"] for x in results[name]]
        total = [x["app_ms"] + x["db_ms"] for x in results[name]]
        vs = [a / b for a, b in zip(app, [x["app_ms"] for x in results[first]], strict=True)]
        vs_total = [a / b for a, b in zip(total, [x["app_ms"] + x["db_ms"] for x in results[first]], strict=True)]
        rows.append(
            [
                name,
                f"{statistics.median(x['rps'] for x in results[name]):.0f}",
                f"{statistics.median(app):.2f}",
                f"{statistics.median(x['db_ms'] for x in results[name]):.2f}",
                summary(vs) + f"× ({'met' if statistics.median(vs) <= TARGET else 'NOT met'})",
                summary(vs_total) + "×",
                f"{statistics.median(x['p99_ms'] for x in results[name]):.0f}",
                str(sum(x["errors"] for x in results[name])),
            ]
        )
    print()
    print(
        table(
            [
                "contender",
                "req/s",
                "app CPU ms/req",
                "db CPU ms/req",
                f"app CPU ÷ its tree's {names[0].split(' (')[0]} (≤ {TARGET}×)",
                f"app + db CPU ÷ its tree's {names[0].split(' (')[0]}",
                "p99 ms",
                "errors",
            ],
            rows,
        )
    )
    print(f"\nload average now: {os.getloadavg()[0]:.1f} (2-core machine); ratios from the same rounds")


if __name__ == "__main__":
    main()
