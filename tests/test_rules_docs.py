"""docs/rules/<ruleset>.md explain every rule id the service cites (a step's `rule`, an error's
`rule`, a docstring), so a client can look up any id a result shows: each id the app or a test
name cites has an anchored entry (`<a id="GC-P3"></a>` then `### GC-P3 — …`) in its ruleset's
page. Where the specification (`../shared/rules/*.md`) sits next to the checkout, every id it
defines has one too, and the pages define no id it does not. Pure file reads: no app, no server."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "rules"
SPEC = Path(__file__).resolve().parents[2] / "shared" / "rules"
PAGES = {"GC": "great-cosmos.md", "AS": "asgard.md", "RB": "rulebook-d100.md", "WA": "worlds-awakening.md"}

CITED = re.compile(r"\b(GC|AS|RB|WA)-[A-Z]+\d+[a-z]?\b")
# a test named after its rule: `test_gc_t2_…` cites GC-T2 (the part is one letter, README of the rules)
TEST_NAME = re.compile(r"\bdef (test_(gc|as|rb|wa)_([a-z])(\d+)_)")
ANCHOR = re.compile(r'^<a id="((?:GC|AS|RB|WA)-[A-Z]+\d+[a-z]?)"></a>\s*$')
HEADING = re.compile(r"^#{2,4} ((?:GC|AS|RB|WA)-[A-Z]+\d+[a-z]?) — \S")
SPEC_ENTRY = re.compile(r"^- ((?:GC|AS|RB|WA)-[A-Z]+\d+[a-z]?)\b")


def _number(rule_id: str) -> tuple[str, int]:
    part, number = re.fullmatch(r"[A-Z]+-([A-Z]+)(\d+)[a-z]?", rule_id).groups()  # type: ignore[union-attr]
    return part, int(number)


def cited_by_app() -> dict[str, set[str]]:
    """Every rule id under app/ (code, docstrings, messages), with the files citing it."""
    where: dict[str, set[str]] = defaultdict(set)
    for path in sorted((REPO / "app").rglob("*.py")):
        for match in CITED.finditer(path.read_text(encoding="utf-8")):
            where[match.group(0)].add(str(path.relative_to(REPO)))
    return where


def cited_by_test_names() -> dict[str, set[str]]:
    where: dict[str, set[str]] = defaultdict(set)
    for path in sorted((REPO / "tests").rglob("*.py")):
        for match in TEST_NAME.finditer(path.read_text(encoding="utf-8")):
            rule_id = f"{match.group(2).upper()}-{match.group(3).upper()}{match.group(4)}"
            where[rule_id].add(f"{path.relative_to(REPO)}::{match.group(1)}…")
    return where


def entries(page: Path) -> list[str]:
    """The ids with an entry in a page, in page order: an explicit anchor line, then (after blank
    lines) the entry's heading naming the same id."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found = []
    for i, line in enumerate(lines):
        anchor = ANCHOR.match(line)
        if anchor is None:
            continue
        following = next((x for x in lines[i + 1 :] if x.strip()), "")
        heading = HEADING.match(following)
        assert heading is not None and heading.group(1) == anchor.group(1), (
            f"{page.name}: the anchor {anchor.group(1)} is not followed by its heading "
            f"'### {anchor.group(1)} — …' (found {following!r})"
        )
        found.append(anchor.group(1))
    return found


def documented() -> dict[str, list[str]]:
    return {prefix: entries(DOCS / name) for prefix, name in PAGES.items()}


def missing(cited: dict[str, set[str]], pages: dict[str, list[str]]) -> list[str]:
    return sorted(
        f"{rule_id} (cited by {', '.join(sorted(cited[rule_id])[:3])}) has no entry in docs/rules/{PAGES[rule_id[:2]]}"
        for rule_id in cited
        if rule_id not in pages[rule_id[:2]]
    )


def test_every_rule_id_the_app_cites_has_an_entry_in_its_rulesets_page():
    cited = cited_by_app()
    assert len(cited) > 100  # the pattern still finds the ids (a broken one would pass vacuously)
    assert missing(cited, documented()) == []


def test_every_rule_id_a_test_is_named_after_has_an_entry_in_its_rulesets_page():
    cited = cited_by_test_names()
    assert len(cited) > 50
    assert missing(cited, documented()) == []


def test_each_page_lists_each_id_once_in_id_order_within_its_part():
    for prefix, ids in documented().items():
        assert len(ids) == len(set(ids)), f"{PAGES[prefix]}: an id has two entries"
        assert all(rule_id.startswith(prefix + "-") for rule_id in ids), f"{PAGES[prefix]}: another ruleset's id"
        by_part: dict[str, list[int]] = defaultdict(list)
        for rule_id in ids:
            part, number = _number(rule_id)
            by_part[part].append(number)
        for part, numbers in by_part.items():
            assert numbers == sorted(numbers), f"{PAGES[prefix]}: {prefix}-{part}… entries out of order: {numbers}"


def test_a_page_missing_an_entry_is_reported_naming_the_id(tmp_path):
    """The check can fail: a page without GC-P3's entry is reported, naming the id."""
    page = (DOCS / PAGES["GC"]).read_text(encoding="utf-8")
    cut = tmp_path / PAGES["GC"]
    cut.write_text(page.replace('<a id="GC-P3"></a>', ""), encoding="utf-8")
    pages = {**documented(), "GC": entries(cut)}
    problems = missing({"GC-P3": {"app/rulesets/great_cosmos/schemas.py"}}, pages)
    assert len(problems) == 1 and problems[0].startswith("GC-P3 ")


@pytest.mark.skipif(not SPEC.is_dir(), reason="the specification (../shared/rules) is not next to this checkout")
def test_every_id_the_specification_defines_has_an_entry_and_no_other():
    pages = documented()
    for prefix, name in PAGES.items():
        spec_ids = [
            m.group(1)
            for line in (SPEC / name).read_text(encoding="utf-8").splitlines()
            if (m := SPEC_ENTRY.match(line))
        ]
        assert spec_ids, f"no rule id found in {SPEC / name}"
        assert sorted(set(spec_ids) - set(pages[prefix])) == [], f"docs/rules/{name} misses spec ids"
        assert sorted(set(pages[prefix]) - set(spec_ids)) == [], f"docs/rules/{name} has ids the spec does not"
