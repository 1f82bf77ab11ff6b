"""Shared helpers of the benchmarks: interleaved timing, medians, ratio tables.

The machine is small and noisy, so every benchmark interleaves its contenders
(A B C A B C …), repeats, and reports the median and min–max of the *ratios
measured within one round* — never an absolute target.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python bench/x.py` from the repo root
    sys.path.insert(0, str(ROOT))


# the server stacks the HTTP benches run uvicorn on: the production stack first (`python -m app
# serve` is uvicorn's defaults with uvloop and httptools installed: the reference table, issue 28
# item 1), pure-Python asyncio + h11 as the optional second one (the stack of rounds 1 and 2)
STACKS: dict[str, list[str]] = {
    "uvloop": ["--loop", "uvloop", "--http", "httptools"],
    "h11": ["--loop", "asyncio", "--http", "h11"],
}
REFERENCE_STACK = "uvloop"
STACK_NAMES = {"uvloop": "uvloop + httptools (production, reference)", "h11": "asyncio + h11"}


def migrate(env: dict[str, str], tree: Path = ROOT, timeout: float | None = 120) -> None:
    """`python -m app migrate` of `tree` with these settings over the environment: a bench's
    database made ready before its server starts (the output kept, shown only by the error)."""
    subprocess.run(
        [sys.executable, "-m", "app", "migrate"],
        cwd=tree,
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        timeout=timeout,
    )


def check_stack(stack: str) -> list[str]:
    """uvicorn's arguments of `stack`; the production stack's modules must be importable."""
    if stack not in STACKS:
        raise SystemExit(f"unknown stack {stack!r}: one of {', '.join(STACKS)}")
    if stack == "uvloop":
        import importlib.util

        missing = [m for m in ("uvloop", "httptools") if importlib.util.find_spec(m) is None]
        if missing:
            raise SystemExit(f"the production stack needs {', '.join(missing)} (pip install 'uvicorn[standard]')")
    return STACKS[stack]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process so far (/proc/<pid>/stat), its own threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (a uvicorn supervisor and its workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def tree_cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for p in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):  # gone
            total += cpu_seconds(p)
    return total


def revision() -> str:
    """The commit measured, flagged when app/ has uncommitted changes (a shared work tree)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "app"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    return f"commit {head}" + (" + uncommitted app/ changes" if dirty else "")


def machine() -> str:
    return (
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {revision()}"
    )


def calibrate(fn: Callable[[int], None], budget_s: float) -> int:
    """How many iterations of `fn(n)` take about `budget_s` seconds."""
    n = 1
    while True:
        t0 = time.perf_counter()
        fn(n)
        dt = time.perf_counter() - t0
        if dt >= budget_s / 4 or n >= 1 << 24:
            return max(1, int(n * budget_s / max(dt, 1e-9)))
        n *= 4


def per_op_ns(fn: Callable[[int], None], n: int) -> float:
    """Nanoseconds per iteration of one batch of `n` (GC collected first, then off)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        fn(n)
        return (time.perf_counter_ns() - t0) / n
    finally:
        gc.enable()


def interleave(contenders: dict[str, Callable[[int], None]], rounds: int, budget_s: float) -> dict[str, list[float]]:
    """ns/op of each contender per round, run A B C A B C … (the order rotates each round)."""
    sizes = {name: calibrate(fn, budget_s) for name, fn in contenders.items()}
    names = list(contenders)
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            out[name].append(per_op_ns(contenders[name], sizes[name]))
    return out


def ratios(num: list[float], den: list[float]) -> list[float]:
    """Round-by-round ratios num[i] / den[i] (each pair measured in the same round)."""
    return [a / b for a, b in zip(num, den)]


def summary(values: list[float], fmt: str = "{:.2f}") -> str:
    """`median (min–max)`."""
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table (pasted as is into bench/README.md)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"
