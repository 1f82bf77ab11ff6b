"""Idle event streams vs the rest of the server (issue 10, item 5).

    .venv/bin/python bench/bench_streams.py [--db sqlite|postgres] [--streams 1000] [--rounds 3] [--samples 300]

One uvicorn worker (asyncio loop, h11, access log off) on a fresh database
(a SQLite WAL file, or PostgreSQL database `jdr_bench_streams` on
127.0.0.1:5432, created and dropped here). Through HTTP it creates 10
great-cosmos campaigns with one character each. Then, round after round:
- without: `--samples` sequential GET /v1/characters/{id} → p99;
- with:    `--streams` idle SSE streams opened (spread over the 10 campaigns,
           raw sockets held by this process), 2 s idle, the same GETs → p99,
           then the streams are closed.
The ratio per round is p99 with ÷ p99 without (target ≤ 3×). RSS of the
server process (/proc) is read after a warm-up, before any stream, and after
the last streams closed (+3 s and a few GETs): after ÷ before (target ≤ 1.2×);
the peak with streams open is printed for context.

The hot path beside them (issue 16 item 5): in each phase, `--hot-seconds` of
POST /v1/characters/{id}/tests (wrk -t2 -c`--hot-connections`, else Python threads)
in an 11th campaign no stream follows (target: with ÷ without ≥ 0.9, i.e. the
1,000 idle streams cost the hot path ≤ 10% of its throughput), and, for
information, in the first campaign, which 100 of the streams follow (every test
is then also sent to 100 streams). About 2 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401 (puts the repository on sys.path)
import httpx
import psycopg
from _common import ROOT, machine, summary, table, verdict
from bench_http import lua, run_python_load, run_wrk

PYTHON = sys.executable
HOST = "127.0.0.1"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_NAME = "jdr_bench_streams"
CAMPAIGNS = 10
SHEET = {
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


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


async def get_latencies(http: httpx.AsyncClient, path: str, token: str, samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        r = await http.get(path, headers={"Authorization": f"Bearer {token}"})
        out.append((time.perf_counter() - t0) * 1000)
        if r.status_code != 200:
            raise RuntimeError(f"GET {path}: {r.status_code} {r.text[:200]}")
    return out


async def open_stream(port: int, cid: str, token: str):
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(
        f"GET /v1/campaigns/{cid}/events HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"stream refused: {head[:100]!r}")
    return writer


def hot_load(port: int, character: str, token: str, args) -> dict[str, float]:
    """POST …/tests for `--hot-seconds` with `--hot-connections` connections (wrk, else Python threads)."""
    url = f"http://{HOST}:{port}/v1/characters/{character}/tests"
    if shutil.which("wrk") and not args.python_load:
        script = Path(tempfile.gettempdir()) / f"jdr-bench-streams-{os.getpid()}-{character}.lua"
        lua(script, '{"stat":"force"}', token)
        return run_wrk(url, script, 2, args.hot_connections, args.hot_seconds)
    return run_python_load(url, "POST", '{"stat":"force"}', token, args.hot_connections, args.hot_seconds)


async def run(
    port: int, pid: int, campaigns: list[tuple[str, str, str]], args, quiet: tuple[str, str, str] | None = None
) -> dict:
    _, token, character = campaigns[0]
    path = f"/v1/characters/{character}"
    result: dict = {"without": [], "with": [], "open_s": []}
    hot = {"quiet": quiet, "followed": campaigns[0]} if quiet is not None else {}
    for name in hot:
        result[f"hot {name} without"], result[f"hot {name} with"] = [], []
    async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", timeout=30) as http:
        await get_latencies(http, path, token, args.samples)  # warm-up
        for _cid, tok, hero in hot.values():  # the hot path's threads and pools too, before RSS is read
            await asyncio.to_thread(hot_load, port, hero, tok, args)
        result["rss_before"] = rss_mb(pid)
        peak = 0.0
        for r in range(args.rounds):
            for phase in ("without", "with") if r % 2 == 0 else ("with", "without"):
                if phase == "without":
                    result["without"].append(p99(await get_latencies(http, path, token, args.samples)))
                    for name, (_cid, tok, hero) in hot.items():
                        result[f"hot {name} without"].append(await asyncio.to_thread(hot_load, port, hero, tok, args))
                    continue
                t0 = time.perf_counter()
                writers = []
                try:
                    per = args.streams // len(campaigns)
                    for cid, tok, _ in campaigns:
                        writers += await asyncio.wait_for(
                            asyncio.gather(*(open_stream(port, cid, tok) for _ in range(per))), 120
                        )
                    result["open_s"].append(time.perf_counter() - t0)
                    await asyncio.sleep(2.0)
                    result["with"].append(p99(await get_latencies(http, path, token, args.samples)))
                    for name, (_cid, tok, hero) in hot.items():
                        result[f"hot {name} with"].append(await asyncio.to_thread(hot_load, port, hero, tok, args))
                    peak = max(peak, rss_mb(pid))
                finally:
                    for w in writers:
                        w.close()
                await asyncio.sleep(1.0)
            await asyncio.sleep(1.0)
            print(
                f"  round {r + 1}: p99 without {result['without'][-1]:.1f} ms, with {args.streams} streams "
                f"{result['with'][-1]:.1f} ms (opened in {result['open_s'][-1]:.1f} s); "
                f"RSS {rss_mb(pid):.0f} MB after they closed",
                flush=True,
            )
            for name in hot:
                wo, w = result[f"hot {name} without"][-1], result[f"hot {name} with"][-1]
                print(
                    f"    POST tests ({name} campaign): {wo['rps']:.0f} req/s p99 {wo['p99_ms']:.0f} ms without, "
                    f"{w['rps']:.0f} req/s p99 {w['p99_ms']:.0f} ms with; non-2xx {wo['non_2xx'] + w['non_2xx']}",
                    flush=True,
                )
        await asyncio.sleep(3.0)
        await get_latencies(http, path, token, 20)
        result["rss_after"] = rss_mb(pid)
        result["rss_peak"] = peak
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--hot-seconds", type=int, default=6, help="the hot path's load per phase (0: no hot-path phases)")
    ap.add_argument("--hot-connections", type=int, default=16)
    ap.add_argument("--python-load", action="store_true", help="the Python load generator even if wrk exists")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.streams + 512:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.streams + 512), hard))
    print(
        f"bench_streams: {machine()}, {args.db}, {args.streams} streams, {args.rounds} rounds, "
        f"{args.samples} GETs per phase",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="jdr-bench-streams-") as tmp:
        work = Path(tmp)
        if args.db == "sqlite":
            url = f"sqlite:///{work / 'streams.db'}"
        else:
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{PG_NAME}" WITH (FORCE)')
                conn.execute(f'CREATE DATABASE "{PG_NAME}"')
            url = f"postgresql://postgres@127.0.0.1:5432/{PG_NAME}"
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "ADMIN_TOKEN": "",
            "RATE_LIMIT_PER_MINUTE": "0",
            "EVENT_STREAMS_PER_TOKEN": str(args.streams),
            "CAMPAIGNS_PER_HOUR_PER_ADDRESS": "0",
        }
        subprocess.run(
            [PYTHON, "-m", "app", "migrate"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120
        )
        port = _common_free_port()
        log = open(work / "server.log", "w")
        proc = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "uvicorn",
                "app.main:app",
                "--host",
                HOST,
                "--port",
                str(port),
                "--workers",
                "1",
                "--no-access-log",
                "--log-level",
                "warning",
                "--loop",
                "asyncio",
                "--http",
                "h11",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"http://{HOST}:{port}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {(work / 'server.log').read_text()[-2000:]}")
                time.sleep(0.2)
            campaigns = []
            with httpx.Client(base_url=f"http://{HOST}:{port}", timeout=10) as c:
                for i in range(CAMPAIGNS):
                    r = c.post("/v1/campaigns", json={"name": f"Bench {i}", "ruleset": "great-cosmos"})
                    r.raise_for_status()
                    cid, token = r.json()["id"], r.json()["gm_token"]
                    r = c.post(
                        f"/v1/campaigns/{cid}/characters",
                        headers={"Authorization": f"Bearer {token}"},
                        json={"name": "Hero", "kind": "pc", "sheet": SHEET},
                    )
                    r.raise_for_status()
                    campaigns.append((cid, token, r.json()["id"]))
                quiet = None
                if args.hot_seconds > 0:  # a campaign no stream follows: the hot path beside idle streams
                    r = c.post("/v1/campaigns", json={"name": "Bench quiet", "ruleset": "great-cosmos"})
                    cid, token = r.json()["id"], r.json()["gm_token"]
                    r = c.post(
                        f"/v1/campaigns/{cid}/characters",
                        headers={"Authorization": f"Bearer {token}"},
                        json={"name": "Hero", "kind": "pc", "sheet": SHEET},
                    )
                    quiet = (cid, token, r.json()["id"])
            res = asyncio.run(asyncio.wait_for(run(port, proc.pid, campaigns, args, quiet), 900))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
            log.close()
            if args.db == "postgres":
                with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{PG_NAME}" WITH (FORCE)')
    p99_ratios = [w / wo for w, wo in zip(res["with"], res["without"])]
    rss_ratio = res["rss_after"] / res["rss_before"]
    print()
    print(
        table(
            [
                "database",
                "GET p99 with ÷ without (median, min–max)",
                "p99 ms without / with (median)",
                "RSS after ÷ before",
                "RSS MB before / peak / after",
                "1,000 streams opened in (s)",
            ],
            [
                [
                    args.db,
                    summary(p99_ratios) + f"× ({verdict(statistics.median(p99_ratios) <= 3.0)}, target ≤ 3×)",
                    f"{statistics.median(res['without']):.1f} / {statistics.median(res['with']):.1f}",
                    f"{rss_ratio:.2f}× ({verdict(rss_ratio <= 1.2)}, target ≤ 1.2×)",
                    f"{res['rss_before']:.0f} / {res['rss_peak']:.0f} / {res['rss_after']:.0f}",
                    summary(res["open_s"], "{:.1f}"),
                ]
            ],
        )
    )
    rows = []
    for name, what in (
        ("quiet", "a campaign no stream follows (target ≤ 10% lost)"),
        ("followed", f"the campaign {args.streams // CAMPAIGNS} of the streams follow (info)"),
    ):
        if f"hot {name} with" not in res:
            continue
        wo, w = res[f"hot {name} without"], res[f"hot {name} with"]
        kept = [a["rps"] / b["rps"] for a, b in zip(w, wo)]
        ok = statistics.median(kept) >= 0.9
        rows.append(
            [
                args.db,
                what,
                summary(kept) + "×" + (f" ({verdict(ok)})" if name == "quiet" else ""),
                f"{statistics.median(x['rps'] for x in wo):.0f} / {statistics.median(x['rps'] for x in w):.0f}",
                f"{statistics.median(x['p99_ms'] for x in wo):.0f} / {statistics.median(x['p99_ms'] for x in w):.0f}",
                str(sum(x["non_2xx"] + x["socket_errors"] for x in wo + w)),
            ]
        )
    if rows:
        print()
        print(
            table(
                [
                    "database",
                    "POST …/tests in",
                    f"req/s with ÷ without {args.streams} streams (median, min–max)",
                    "req/s without / with",
                    "p99 ms without / with",
                    "non-2xx + socket errors",
                ],
                rows,
            )
        )


def _common_free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    main()
