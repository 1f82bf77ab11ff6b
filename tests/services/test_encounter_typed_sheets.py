"""Combat on typed sheets (issue 23): `Party.sheet` (and `Entrant.sheet`, and what the view hooks
`is_down` / `resources` / `posture` read) is the ruleset's `Sheet` model, parsed once from the
stored sheet; the changes an action records compare the sheets' `model_dump()`; the combat code
reads the model's attributes, never the stored dict with its defaults restated."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from app.rulesets.contract.combat import EncounterRules
from app.rulesets.registry import RULESET_IDS, get_adapter, rules_for
from tests.api.encounter_support import Table, ids, table
from tests.factories import as_fighter, gc_fighter, rb_fighter, wa_fighter

__all__ = ["table"]

APP = Path(__file__).resolve().parents[2] / "app"
RULESET_COMBAT = [
    *sorted((APP / "rulesets").glob("*/combat.py")),  # the four rulesets' and the contract's
    APP / "rulesets" / "great_cosmos" / "exchange.py",
]
# a sheet read or written as a dict: `sheet.get("hp")`, `sheet["hp"]`, `.sheet.get(`…
SHEET_AS_DICT = re.compile(r"sheet\.get\(|sheet\[")

FIGHTERS = {
    "great-cosmos": (gc_fighter(60), gc_fighter(40), {"damage": "1d6"}),
    "asgard": (as_fighter(3), as_fighter(1), {"skill": "combat", "damage": "1d6"}),
    "rulebook-d100": (rb_fighter(60), rb_fighter(40), {"damage": "1d4"}),
    "worlds-awakening": (wa_fighter(3), wa_fighter(1), {"damage": "1d4"}),
}


def test_issue23_ruleset_combat_code_reads_typed_sheets_never_dicts():
    offenders = [
        f"{path.relative_to(APP)}:{n}: {line.strip()}"
        for path in RULESET_COMBAT
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SHEET_AS_DICT.search(line)
    ]
    assert len(RULESET_COMBAT) == 6 and offenders == []


def _spy(monkeypatch: pytest.MonkeyPatch, rules: EncounterRules, name: str, seen: list[Any], pick) -> None:
    original = getattr(type(rules), name)

    def spy(self, *args, **kwargs):
        seen.append(pick(*args))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(rules), name, spy)


@pytest.mark.parametrize("ruleset", RULESET_IDS)
def test_issue23_combat_and_its_hooks_read_the_rulesets_sheet_model(table, monkeypatch, ruleset):
    """Whatever the use case (initiative, an attack, a state read, the GM's damage), the sheets
    the ruleset's combat sees are its `Sheet` models; and the action's changes are the fields that
    changed (the model dumps compared), recorded as JSON."""
    t: Table = table(ruleset)
    rules, model = rules_for(ruleset), get_adapter(ruleset).Sheet
    a_sheet, b_sheet, extra = FIGHTERS[ruleset]
    s = t.encounter(
        [
            {"character_id": t.character("A", a_sheet), "position": {"x": 0, "y": 0}},
            {"character_id": t.character("B", b_sheet), "position": {"x": 1, "y": 0}},
        ]
    )
    eid, n = s["id"], ids(s)
    entrants: list[Any] = []
    parties: list[Any] = []
    downs: list[Any] = []
    _spy(monkeypatch, rules, "roll_initiative", entrants, lambda dice, es, *rest: [e.sheet for e in es])
    _spy(monkeypatch, rules, "resolve", parties, lambda x: [x.actor.sheet, x.foe.sheet])
    _spy(monkeypatch, rules, "is_down", downs, lambda sheet: sheet)
    r = t.client.post(f"/v1/encounters/{eid}/start", json={"seed": 3}, headers=t.gm)
    assert r.status_code == 201, r.text
    actor = r.json()["current"]["combatant_id"]
    target = next(cid for cid in n.values() if cid != actor)
    r = t.client.post(
        f"/v1/encounters/{eid}/actions",
        json={"type": "attack", "actor_id": actor, "target_id": target, "seed": 11, **extra},
        headers=t.gm,
    )
    assert r.status_code == 201, r.text
    for change in r.json()["changes"]:  # JSON values, as stored (nested models dumped)
        assert not hasattr(change["before"], "model_dump") and not hasattr(change["after"], "model_dump")
    damage = t.act(eid, {"type": "damage", "target_id": target, "amount": 1})
    assert damage["changes"] and {c["field"] for c in damage["changes"]} <= {p.name for p in rules.pools} | {
        "down",
        "condition",
    }
    t.state(eid)
    assert entrants and parties and downs
    for sheet in [*entrants[0], *parties[0], *downs]:
        assert type(sheet) is model, type(sheet)


def test_issue23_gc_p5_p6_typed_sheet_writes_are_stored_as_json_and_diffed_field_by_field(table):
    """GC-P5: entering Illumination writes the typed sheet's points, posture and advantage; GC-P6
    (Decision): ending the fight puts the default posture back (the model's `default_posture`) and
    clears the advantage. Each is recorded as the field that changed, stored as JSON."""
    t: Table = table("great-cosmos")
    a = t.character("A", gc_fighter(60, light_points=1, dark_points=0))
    s = t.encounter([{"character_id": a}, {"character_id": t.character("B", gc_fighter(40))}])
    eid, n = s["id"], ids(s)
    t.start(eid, dice=[])
    entered = t.act(eid, {"type": "posture", "actor_id": n["A"], "posture": "illumination", "dice": [4]})
    changed = {c["field"]: (c["before"], c["after"]) for c in entered["changes"] if c.get("character_id")}
    assert changed == {
        "light_points": (1, 0),
        "posture_advantage": (None, 4),
        "posture": (None, "illumination"),
    }
    r = t.client.post(f"/v1/encounters/{eid}/end", headers=t.gm)
    assert r.status_code == 200, r.text
    stored = t.sheet(a)["sheet"]
    assert (stored["posture"], stored["posture_advantage"], stored["backlash"]) == ("defensive", None, None)


def test_issue23_the_view_names_no_rulesets_counters_the_ruleset_declares_them():
    """The counters naming a combatant (GC-P2 riposte, GC-P6 counter-attack and provocation), which a
    player sees only for combatants it sees, are the ruleset's `naming_counters`, not the view's."""
    view = (APP / "services" / "encounters" / "view.py").read_text()
    assert not re.search(r"riposte|counter_attack|provoked_by", view)
    assert rules_for("great-cosmos").naming_counters == ("riposte", "counter_attack", "provoked_by")
    assert all(not rules_for(r).naming_counters for r in RULESET_IDS if r != "great-cosmos")
