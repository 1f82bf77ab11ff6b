"""The suite's cache of generated artefacts (tests/artefacts.py, issue 22 item 1) never serves a stale
one: an entry is named by the hash of every input, a change of any input names another entry (built
anew), a failed build leaves none, and `JDR_TEST_CACHE=off` builds every time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import artefacts, typescript_build


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("JDR_TEST_CACHE", str(where))
    return where


def test_the_key_changes_with_every_input_and_inputs_never_run_together(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    assert artefacts.key(a) == artefacts.key(a)
    assert artefacts.key(a) != artefacts.key(b)  # same bytes, another file
    before = artefacts.key(a, "x")
    a.write_text("{ }")
    assert artefacts.key(a, "x") != before
    assert artefacts.key("ab", "c") != artefacts.key("a", "bc")
    assert artefacts.key("ab") != artefacts.key(b"ab", b"")


def test_an_entry_is_built_once_per_key_and_a_new_key_builds_anew(cache):
    built: list[Path] = []

    def build(into: Path) -> None:
        built.append(into)
        (into / "out").write_text(f"build {len(built)}")

    first = artefacts.entry("kind", artefacts.key("inputs 1"), build)
    assert artefacts.entry("kind", artefacts.key("inputs 1"), build) == first and len(built) == 1
    second = artefacts.entry("kind", artefacts.key("inputs 2"), build)
    assert second != first and len(built) == 2
    assert (first / "out").read_text() == "build 1" and (second / "out").read_text() == "build 2"
    assert first.parent == cache / "kind"


def test_a_failed_build_leaves_nothing_to_serve(cache):
    def broken(into: Path) -> None:
        (into / "out").write_text("half")
        raise RuntimeError("the step failed")

    with pytest.raises(RuntimeError):
        artefacts.entry("kind", "k", broken)
    assert not (cache / "kind" / "k").exists()
    assert list((cache / "kind").iterdir()) == []  # nor its temporary directory
    made = artefacts.entry("kind", "k", lambda into: (into / "out").write_text("whole"))
    assert (made / "out").read_text() == "whole"


def test_off_builds_every_time_in_a_fresh_directory(monkeypatch):
    monkeypatch.setenv("JDR_TEST_CACHE", "off")
    assert artefacts.root() is None
    calls: list[Path] = []
    first = artefacts.entry("kind", "k", calls.append)
    second = artefacts.entry("kind", "k", calls.append)
    assert calls == [first, second] and first != second
    shutil.rmtree(first)
    shutil.rmtree(second)


def test_a_kind_keeps_its_most_recently_used_entries(cache):
    names = [f"k{i}" for i in range(artefacts.KEEP + 2)]
    for name in names:
        artefacts.entry("kind", name, lambda into: None)
    kept = sorted(p.name for p in (cache / "kind").iterdir())
    assert len(kept) == artefacts.KEEP and names[-1] in kept


def test_the_typescript_build_is_named_by_every_input_of_its_steps(tmp_path, monkeypatch):
    """Changing any file the type generation or `tsc` reads (openapi.json, tsconfig.json,
    package.json, the lock file, any source file but the generated types) names another entry."""
    ts = tmp_path / "tests" / "ts"
    shutil.copytree(typescript_build.TS / "src", ts / "src", ignore=shutil.ignore_patterns("schema.d.ts"))
    for name in ("tsconfig.json", "package.json", "package-lock.json"):
        shutil.copy2(typescript_build.TS / name, ts / name)
    shutil.copy2(typescript_build.ROOT / "openapi.json", tmp_path / "openapi.json")
    monkeypatch.setattr(typescript_build, "TS", ts)
    monkeypatch.setattr(typescript_build, "ROOT", tmp_path)
    monkeypatch.setattr(typescript_build, "SCHEMA", ts / "src" / "schema.d.ts")
    monkeypatch.setattr(typescript_build, "_tool_versions", lambda: "v20.0.0\n10.0.0\n")
    keys = {typescript_build.build_key()}
    (ts / "src" / "schema.d.ts").write_text("// generated: not an input")
    assert typescript_build.build_key() in keys
    for changed in [
        tmp_path / "openapi.json",
        ts / "tsconfig.json",
        ts / "package.json",
        ts / "package-lock.json",
        ts / "src" / "scenario.ts",
    ]:
        changed.write_text(changed.read_text() + " ")
        keys.add(typescript_build.build_key())
    (ts / "src" / "more.ts").write_text("export const x = 1;\n")  # a new source file
    keys.add(typescript_build.build_key())
    monkeypatch.setattr(typescript_build, "_tool_versions", lambda: "v22.0.0\n10.0.0\n")
    keys.add(typescript_build.build_key())
    assert len(keys) == 8


def test_a_linter_runs_again_when_the_spec_or_its_configuration_changes(cache, tmp_path, monkeypatch):
    """`typescript_build.npx` (the Redocly, Spectral and openapi-typescript reports of the served
    spec) answers from the cache only for the same command on the same spec and configuration."""
    import subprocess

    runs: list[list[str]] = []

    def fake_run(command, **kwargs):
        runs.append(command)
        spec = Path(command[2]).read_text()
        return subprocess.CompletedProcess(command, 1, f"linted {spec}", "")

    config = tmp_path / ".lint.yaml"
    config.write_text("rules: {}")
    monkeypatch.delenv(typescript_build.STATE, raising=False)
    monkeypatch.setattr(typescript_build, "node_modules", lambda: None)
    monkeypatch.setattr(typescript_build, "modules_key", lambda: "modules")
    monkeypatch.setattr(typescript_build.subprocess, "run", fake_run)
    lint = lambda spec, *args: typescript_build.npx(
        ["lint", "{in}/s.json", *args], {"s.json": spec}, [config], ok=(0, 1)
    )  # noqa: E731
    done, _ = lint("A")
    assert (done.returncode, done.stdout) == (1, "linted A") and len(runs) == 1
    assert lint("A")[0].stdout == "linted A" and len(runs) == 1  # from the cache
    assert lint("B")[0].stdout == "linted B" and len(runs) == 2
    assert lint("A", "--strict")[0].stdout == "linted A" and len(runs) == 3
    config.write_text("rules: {x: error}")
    assert lint("A")[0].stdout == "linted A" and len(runs) == 4
    with pytest.raises(typescript_build.BuildFailed):  # an exit status not in `ok` is not kept
        typescript_build.npx(["lint", "{in}/s.json"], {"s.json": "C"}, [config], ok=(0,))
    with pytest.raises(typescript_build.BuildFailed):
        typescript_build.npx(["lint", "{in}/s.json"], {"s.json": "C"}, [config], ok=(0,))
    assert len(runs) == 6
