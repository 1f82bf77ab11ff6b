"""The developer loop (issue 22 item 1): `make test` of this tree against an older commit's, in one run.

    .venv/bin/python bench/bench_suite.py [--old 4df4226] [--rounds 1] [--cold]

Each tree runs its own README test command (`make test`, its own Makefile, its own venv made by its
own `make install-dev`: the old tree is `git archive`d into a temporary directory), on SQLite
(`DATABASE_URL` unset), one after the other, the order alternating each round (old new, new old, …),
so both see the same machine. Reported per run: the wall time of `make test`, the CPU of everything
it started (user + system of the waited-for children), and pytest's own count and time of tests (a
JUnit report, asked for through `PYTEST_ADDOPTS`). Then the ratio old ÷ new of each round's wall
times (issue 22: ≥ 3×), and what the suites hold, counted in each tree's `tests/`:

- tests: the JUnit report's test cases (passed, skipped, failed: every parametrized case counts);
- assertions: `assert` statements plus `pytest.raises`/`pytest.warns` and Playwright `expect(…)` calls
  in the test modules and their helpers (the AST of every `tests/**/*.py`);
- rule ids: the distinct rulebook ids (GC-…, AS-…, RB-…, WA-…) that the test names cite (the JUnit
  names, parameters included), and those cited anywhere in `tests/`.

`--cold` runs the new tree with `JDR_TEST_CACHE=off` (its generated artefacts and mypy's cache
built afresh, as on a machine that never ran the suite); the default uses the cache as CI here does.
A run takes old (~8 min) + new (~3 min) per round on the 2-core machine.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import re
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from _common import ROOT, machine, ratios, summary, table, verdict

RULE_ID = re.compile(r"\b(?:GC|AS|RB|WA)-[A-Z]{1,2}\d+\b")
RULESETS = {"gc", "as", "rb", "wa"}
RULE_TOKEN = re.compile(r"[a-z]{1,2}\d+")
ASSERTING_CALLS = {"raises", "warns", "expect"}


@dataclass
class Run:
    tree: str
    wall: float
    cpu: float
    tests: int
    passed: int
    skipped: int
    failed: int
    pytest_time: float
    names: set[str]
    status: int


def archive(rev: str, into: Path) -> Path:
    """`rev`'s tree, extracted under `into`."""
    data = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    tree = into / f"tree-{rev}"
    tree.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_suite(name: str, tree: Path, report: Path, env: dict[str, str]) -> Run:
    env = {**os.environ, **env, "PYTEST_ADDOPTS": f"--junitxml={report}"}
    env.pop("DATABASE_URL", None)
    log = report.with_suffix(".log")
    cpu0, t0 = children_cpu(), time.perf_counter()
    with log.open("w") as out:
        status = subprocess.run(["make", "test"], cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    suite = ET.parse(report).getroot()
    suites = [suite] if suite.tag == "testsuite" else list(suite.iter("testsuite"))
    cases = [case for s in suites for case in s.iter("testcase")]
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    failed = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    names = {f"{c.get('classname')}::{c.get('name')}" for c in cases}
    print(f"  {name}: make test {wall:.1f} s wall, {cpu:.1f} s CPU, {len(cases)} tests, status {status} (log {log})")
    return Run(
        tree=name,
        wall=wall,
        cpu=cpu,
        tests=len(cases),
        passed=len(cases) - skipped - failed,
        skipped=skipped,
        failed=failed,
        pytest_time=sum(float(s.get("time", 0)) for s in suites),
        names=names,
        status=status,
    )


def cited_by_name(name: str) -> set[str]:
    """The rule ids a test's name cites: `GC-K2` as written, or `test_gc_k2_…`, chains included
    (`test_as_t1_t3_h1_…` cites AS-T1, AS-T3 and AS-H1)."""
    cited = set(RULE_ID.findall(name))
    prefix = None
    for token in re.split(r"[^a-z0-9]+", name.lower()):
        if token in RULESETS:
            prefix = token
        elif prefix and RULE_TOKEN.fullmatch(token):
            cited.add(f"{prefix.upper()}-{token.upper()}")
        else:
            prefix = None
    return cited


def assertions(tests_dir: Path) -> int:
    """`assert` statements and asserting calls (`pytest.raises`, `expect(…)`) in `tests_dir`."""
    count = 0
    for path in tests_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Assert):
                count += 1
            elif isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                count += called in ASSERTING_CALLS
    return count


def rule_ids_in(tests_dir: Path) -> set[str]:
    found: set[str] = set()
    for path in tests_dir.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".ts", ".json", ".md"}:
            found |= set(RULE_ID.findall(path.read_text(encoding="utf-8", errors="replace")))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default="4df4226", help="the commit to compare with (issue 22's baseline)")
    parser.add_argument("--rounds", type=int, default=1, help="pairs of runs, the order alternating")
    parser.add_argument("--cold", action="store_true", help="the new tree without its artefact cache")
    args = parser.parse_args()
    print(f"bench_suite: {machine()}; old = {args.old}; {args.rounds} round(s)")

    reports = Path(tempfile.mkdtemp(prefix="jdr-bench-suite-"))  # kept: the JUnit reports and make's logs
    with tempfile.TemporaryDirectory(prefix="jdr-bench-suite-tree-") as tmp:
        old_tree = archive(args.old, Path(tmp))
        print(f"  installing {args.old}'s venv (its own make install-dev)")
        subprocess.run(["make", "install-dev"], cwd=old_tree, check=True, capture_output=True)
        trees = {"old": (old_tree, {}), "new": (ROOT, {"JDR_TEST_CACHE": "off"} if args.cold else {})}
        runs: dict[str, list[Run]] = {"old": [], "new": []}
        for r in range(args.rounds):
            for name in ["old", "new"] if r % 2 == 0 else ["new", "old"]:
                tree, env = trees[name]
                runs[name].append(run_suite(name, tree, reports / f"{name}-{r}.xml", env))

        speedups = ratios([o.wall for o in runs["old"]], [n.wall for n in runs["new"]])
        rows = []
        for name in ("old", "new"):
            for r, run in enumerate(runs[name]):
                rows.append(
                    [
                        f"{name} (round {r + 1})",
                        f"{run.wall:.1f}",
                        f"{run.cpu:.1f}",
                        f"{run.pytest_time:.1f}",
                        f"{run.tests} ({run.passed} passed, {run.skipped} skipped, {run.failed} failed)",
                        str(run.status),
                    ]
                )
        print()
        print(table(["tree", "make test wall s", "CPU s", "pytest's test time s", "tests", "exit"], rows))
        print()
        print(
            f"old ÷ new, make test wall time, per round: {summary(speedups)}× (target ≥ 3×: {verdict(min(speedups) >= 3)})"
        )

        counts = []
        for name, tree in (("old", old_tree), ("new", ROOT)):
            cited = set().union(*map(cited_by_name, runs[name][-1].names))
            counts.append(
                [name, str(assertions(tree / "tests")), str(len(cited)), str(len(rule_ids_in(tree / "tests")))]
            )
        print()
        print(
            table(["tree", "assertions in tests/", "rule ids cited by test names", "rule ids cited in tests/"], counts)
        )
        lost = sorted(
            set().union(*map(cited_by_name, runs["old"][-1].names))
            - set().union(*map(cited_by_name, runs["new"][-1].names))
        )
        print(f"rule ids the old test names cite and the new ones do not: {lost or 'none'}")
        if any(run.status for rs in runs.values() for run in rs):
            sys.exit("a suite failed: see its log above")


if __name__ == "__main__":
    main()
