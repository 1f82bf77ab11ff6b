"""Issue 27 item 2 (its tail): every fight step the server writes carries a stable `key`, a
snake_case word naming its kind, declared where the step is written (a literal, or each branch of a
conditional) and sent right after its `rule`: a client translates a step by its key, never by its
English `what`. The code is read, not run, so a step written on a rare path is checked too."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")


def _texts(node: ast.expr | None) -> list[str] | None:
    """What a node writes: a literal, both branches of a conditional, an f-string with its fields
    filled (`1` after "action", else a state's name); None: a name, computed where it runs."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = _texts(node.body), _texts(node.orelse)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "\0" for v in node.values)
        return [text.replace("\0", "1" if "action \0" in text else "dying")]
    return None


def _pairs(key: ast.expr | None, what: ast.expr | None) -> list[tuple[str | None, str]]:
    keys, whats = _texts(key), _texts(what) or [""]
    if keys is None:
        return [(None, w) for w in whats]
    if len(whats) != len(keys):  # one what for every branch of the key (a pool's name: "")
        whats = [whats[0]] * len(keys)
    return list(zip(keys, whats, strict=True))


def written_steps() -> Iterator[tuple[str, int, list[str], list[tuple[str | None, str]]]]:
    """Every step the code writes: (file, line, its dict's keys in order or [] for a call, its
    (key, what) pairs — key None: not declared as a literal)."""
    for path in sorted(APP.rglob("*.py")):
        where = str(path.relative_to(APP))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                names = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
                if "what" in names and "rule" in names:
                    field = dict(zip(names, node.values, strict=True))
                    if isinstance(field.get("key"), ast.Name):  # a builder's own (a ruleset's `step`): its callers are
                        continue
                    yield (
                        where,
                        node.lineno,
                        [n for n in names if n is not None],
                        _pairs(field.get("key"), field["what"]),
                    )
            elif isinstance(node, ast.Call) and _called(node) == "step":
                key = next((k.value for k in node.keywords if k.arg == "key"), None)
                yield where, node.lineno, [], _pairs(key, node.args[1] if len(node.args) > 1 else None)
            elif isinstance(node, ast.Call) and _called(node) == "_test_step":
                yield where, node.lineno, [], _pairs(node.args[1], node.args[2])
            elif isinstance(node, ast.Call) and _called(node) == "FlowStep":  # the encounter's own, by keywords
                named = [k.arg for k in node.keywords if k.arg is not None]
                field = {k.arg: k.value for k in node.keywords if k.arg is not None}
                yield where, node.lineno, named, _pairs(field.get("key"), field.get("what"))


def _called(node: ast.Call) -> str | None:
    """The name a call calls: `step(…)` (a ruleset's step builder), `FlowStep(…)`, `x.step(…)`."""
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else None


def test_issue27_the_scan_sees_the_steps_of_every_ruleset():
    steps = list(written_steps())
    files = {where.split("/")[1] for where, *_ in steps if where.startswith("rulesets/")}
    assert {"asgard", "great_cosmos", "worlds_awakening", "rulebook_d100"} <= files
    keys = {k for *_, pairs in steps for k, _ in pairs}
    assert len(steps) > 80 and {"attack_test", "condition_counted_in_the_fight", "no_defence_in_posture"} <= keys


def test_issue27_every_step_declares_a_snake_case_key_after_its_rule():
    undeclared = [(w, line) for w, line, _, pairs in written_steps() for k, _ in pairs if k is None]
    assert undeclared == []
    bad = sorted({k for *_, pairs in written_steps() for k, _ in pairs if k is not None and not SNAKE.match(k)})
    assert bad == []
    # the wire order: rule, key, what, then the figures
    misplaced = [
        (w, line, names[:3]) for w, line, names, _ in written_steps() if names and names[:3] != ["rule", "key", "what"]
    ]
    assert misplaced == []


def test_issue27_a_key_names_one_kind_of_step():
    """Two literal texts under one key are the same step reworded nowhere: one kind, one key (a
    pool's name and the GM's heal/damage reuse `damage`, whose texts are not literals)."""
    texts: dict[str, set[str]] = {}
    for *_, pairs in written_steps():
        for k, what in pairs:
            if k is not None and what and "dying" not in what and not what[-1].isdigit():
                texts.setdefault(k, set()).add(what)
    assert {k: sorted(t) for k, t in texts.items() if len(t) > 1} == {}
