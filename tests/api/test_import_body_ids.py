# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""API.md round 4, "A bundle refers only to ids it defines", inside a log entry's body: every id a
body carries (`app.models.results.body_ids`: a combat entry's encounter, the combatants of its
steps, changes, dice and logged request, the characters of its changes, sides and participants,
the entries it reverts or rerolls) is one the bundle defines, else a 422 naming its place, nothing
written. Before, only the entry's own `id`, `kind` and `character_id` were compared: a combat
entry naming another campaign's encounter or combatant imported with 201. Real fights of the four
rulesets still round-trip, and the list of keys is checked against the result models, the step
and change TypedDicts, the rulesets' naming fields and what those fights log."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from app.kit.steps import Step
from app.models.fight_rows import Change, FlowStep
from app.models.results.body_ids import BODY_IDS, body_ids
from app.rulesets.asgard.rules.steps import AsgardStep
from app.rulesets.great_cosmos.rules.steps import GreatCosmosStep
from app.rulesets.registry import RULESET_IDS, rules_for
from app.rulesets.rulebook_d100.rules.steps import RulebookD100Step
from app.rulesets.wire import LogEntry
from app.rulesets.worlds_awakening.rules.steps import WorldsAwakeningStep

from tests.api.encounter_support import Table, table  # noqa: F401  (the fixture)
from tests.api.support import bearer
from tests.api.test_export_import import _ids, _world, as_imported, canonical
from tests.factories import AS, GC, RB, RULESETS, SHEETS, WA
from tests.rulesets.asgard import test_combat as asgard  # the modules, not their tests: collected once
from tests.rulesets.great_cosmos import test_combat as great_cosmos
from tests.rulesets.rulebook_d100 import test_combat as rulebook_d100
from tests.rulesets.worlds_awakening import test_combat as worlds_awakening

SCRIPTED: dict[str, Callable[[Any], Any]] = {
    GC: lambda make: great_cosmos.scripted_fight(make(GC)),
    AS: asgard.test_asgard_scripted_fight_as_c1_c2_c3_c4_c5_c11_c13,
    RB: rulebook_d100.test_rulebook_scripted_fight_rb_f1_f2_f3_f4,
    WA: worlds_awakening.test_worlds_awakening_scripted_fight_wa_c1_c2_c3_c4_c5,
}


def _fought(table, ruleset: str) -> tuple[Table, dict[str, Any]]:
    """The ruleset's scripted fight (tests/rulesets/<id>/test_combat.py), then a second fight where
    two copies of an NPC join and the join is reverted (the copies deleted: a step names the
    deleted character, the changes the removed combatants), and the first fight's foe deleted:
    (the table, its campaign's export)."""
    made: list[Table] = []

    def recording(*args: Any, **kwargs: Any) -> Table:
        made.append(table(*args, **kwargs))
        return made[-1]

    SCRIPTED[ruleset](recording)
    t = made[0]
    hero = t.character("Late hero", SHEETS[ruleset], kind="pc", player=t.alice)
    orc = t.character("Orc", SHEETS[ruleset])
    eid = t.encounter([{"character_id": hero}])["id"]
    t.start(eid, seed=7)
    joined = t.post(f"/v1/encounters/{eid}/combatants", {"character_id": orc, "count": 2, "seed": 8})
    t.post(f"/v1/encounters/{eid}/actions/{joined['action']['id']}/revert", {})
    foe = next(c for c in _export(t)["characters"] if c["name"] in ("Foe", "Brute"))
    assert t.client.delete(f"/v1/characters/{foe['id']}", headers=t.gm).status_code == 204
    bundle = _export(t)
    assert bundle["deleted_characters"] and bundle["removed_combatants"]
    return t, bundle


def _export(t: Table, campaign_id: str | None = None, gm: dict[str, str] | None = None) -> dict[str, Any]:
    r = t.client.get(f"/v1/campaigns/{campaign_id or t.c.id}/export", headers=gm or t.gm)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("ruleset", RULESETS)
def test_a_scripted_fight_of_each_ruleset_round_trips_with_an_identical_log(table, ruleset):
    t, first = _fought(table, ruleset)
    assert {e["kind"] for e in first["log"]} >= {"combat"}
    r = t.client.post("/v1/campaigns/import", json=first)
    assert r.status_code == 201, r.text
    second = _export(t, r.json()["id"], bearer(r.json()["gm_token"]))
    assert _linked(canonical(second)) == _linked(canonical(as_imported(first)))
    assert set(_ids(first)).isdisjoint(_ids(second))


def _linked(bundle: dict[str, Any]) -> dict[str, Any]:
    """A canonical bundle with each entry's other characters as a set: the export lists them by id,
    and an import gives new ids, so two characters an entry names may swap places."""
    return {**bundle, "log": [{**e, "characters": sorted(e["characters"])} for e in bundle["log"]]}


@pytest.mark.parametrize("ruleset", RULESETS)
def test_every_id_a_real_fights_log_carries_is_at_a_key_of_the_one_list(table, ruleset):
    """Every string of a log body that is an id the bundle defines (but the entry's own) sits at a
    key of `BODY_IDS`, of the kind it says; and the bundle defines every id at those keys."""
    _, bundle = _fought(table, ruleset)
    kinds: dict[str, str] = {x: "character" for x in [*(c["id"] for c in bundle["characters"])]}
    kinds |= {x: "character" for x in bundle["deleted_characters"]}
    kinds |= {e["id"]: "encounter" for e in bundle["encounters"]}
    kinds |= {c["id"]: "combatant" for e in bundle["encounters"] for c in e["combatants"]}
    kinds |= {x: "combatant" for x in bundle["removed_combatants"]}
    kinds |= {x["id"]: "entry" for x in [*bundle["actions"], *bundle["log"]]}
    for entry in bundle["log"]:
        listed = {place: (kind, value) for kind, value, place in body_ids(entry["body"], places=True)}
        assert [(k, v) for k, v, _ in body_ids(entry["body"])] == list(listed.values())  # one walk, with or without
        for place, value in _strings(entry["body"]):
            if value in kinds and place != ("id",):
                assert place in listed, (entry["kind"], place, kinds[value])
                assert listed[place] == (kinds[value], value), (entry["kind"], place)
        assert all(value in kinds for _, value in listed.values()), entry["body"]


def _strings(value: Any, place: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        return [(place, value)]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    return [found for k, v in items for found in _strings(v, (*place, k))]


STEPS = (Step, FlowStep, Change, AsgardStep, GreatCosmosStep, RulebookD100Step, WorldsAwakeningStep)


def _model_fields(model: Any, seen: set[Any]) -> set[str]:
    """Every field name of the models a type holds, at any depth."""
    if typing.get_origin(model) is typing.Annotated or hasattr(model, "__value__"):
        return _model_fields(getattr(model, "__value__", None) or typing.get_args(model)[0], seen)
    if isinstance(model, type) and issubclass(model, BaseModel):
        if model in seen:
            return set()
        seen.add(model)
        return set(model.model_fields).union(*(_model_fields(f.annotation, seen) for f in model.model_fields.values()))
    return set().union(*(_model_fields(a, seen) for a in typing.get_args(model)))


def test_the_list_holds_every_id_the_models_and_the_rules_declare():
    declared = _model_fields(LogEntry, set()) | {k for s in STEPS for k in typing.get_type_hints(s)}
    ids = {k for k in declared if k.endswith(("_id", "_ids"))}
    for ruleset in RULESET_IDS:
        ids |= {*rules_for(ruleset).naming_step_fields, *rules_for(ruleset).naming_counters}
    assert ids - set(BODY_IDS) == set()
    assert {BODY_IDS[k] for k in rules_for(GC).naming_counters} == {"combatant"}


# --- refusals ---------------------------------------------------------------------------------


def _elsewhere(client) -> dict[str, str]:
    """Another campaign's encounter, combatant and character: the ids an attacker would name."""
    cid, gm = _world(client, GC)
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    fight = bundle["encounters"][0]
    return {
        "encounter": fight["id"],
        "combatant": fight["combatants"][1]["id"],
        "character": bundle["characters"][1]["id"],
        "entry": bundle["log"][0]["id"],
    }


def _damage(bundle: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The GM's damage action's log entry (its target, its steps, its sheet change)."""
    return next((i, e["body"]) for i, e in enumerate(bundle["log"]) if e["body"].get("type") == "damage")


def _on_change(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return next((k, c) for k, c in enumerate(body["changes"]) if "character_id" in c)


SPOILS = {
    "encounter": (lambda body, x: body.update(encounter_id=x), lambda body: ["encounter_id"]),
    "target": (lambda body, x: body.update(target_id=x), lambda body: ["target_id"]),
    "step_combatant": (
        lambda body, x: body["steps"][-1].update(combatant_id=x),
        lambda body: ["steps", str(len(body["steps"]) - 1), "combatant_id"],
    ),
    "change_combatant": (
        lambda body, x: _on_change(body)[1].update(combatant_id=x),
        lambda body: ["changes", str(_on_change(body)[0]), "combatant_id"],
    ),
    "change_character": (
        lambda body, x: _on_change(body)[1].update(character_id=x),
        lambda body: ["changes", str(_on_change(body)[0]), "character_id"],
    ),
    "reverts": (lambda body, x: body.update(reverts=x), lambda body: ["reverts"]),
}
KIND = {"encounter": "encounter", "reverts": "entry", "change_character": "character"}


@pytest.mark.parametrize("spoil", SPOILS)
def test_a_body_naming_an_id_the_bundle_does_not_define_is_a_422_at_its_place(client, count_rows, spoil):
    """A combat entry naming another campaign's encounter, combatant (its target, a step's, a
    change's) or character (a sheet change's), or an entry it reverts: 422 at that place in the
    body, nothing written (before: 201, the id stored as it was)."""
    cid, gm = _world(client, GC)
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    foreign = _elsewhere(client)[KIND.get(spoil, "combatant")]
    i, body = _damage(bundle)
    change, where = SPOILS[spoil]
    change(body, foreign)
    before = count_rows("campaign"), count_rows("combatant"), count_rows("roll_log")
    r = client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_bundle"
    assert [str(p) for p in r.json()["errors"][0]["loc"]] == ["body", "log", str(i), "body", *where(body)]
    assert foreign in r.json()["detail"]
    assert (count_rows("campaign"), count_rows("combatant"), count_rows("roll_log")) == before


def test_a_combatant_of_another_encounter_of_the_bundle_is_refused_too(client):
    """A combat entry's combatants are its own encounter's (or removed since): a combatant of the
    bundle's other fight is another fight's row."""
    cid, gm = _world(client, GC)
    hero = client.get(f"/v1/campaigns/{cid}/characters", headers=gm).json()["items"][0]["id"]
    r = client.post(
        f"/v1/campaigns/{cid}/encounters", json={"name": "Other", "combatants": [{"character_id": hero}]}, headers=gm
    )
    assert r.status_code == 201, r.text
    other = r.json()["combatants"][0]["id"]
    bundle = client.get(f"/v1/campaigns/{cid}/export", headers=gm).json()
    i, body = _damage(bundle)
    body["rolls"] = [{"die": "d6", "value": 3, "purpose": "damage", "by": other}]
    r = client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 422, r.text
    assert [str(p) for p in r.json()["errors"][0]["loc"]] == ["body", "log", str(i), "body", "rolls", "0", "by"]


def test_a_level_up_naming_another_character_in_its_body_is_refused(client):
    """A character bundle's level-up whose chance test names another campaign's character."""
    cid, gm = _world(client, GC)
    hero = client.get(f"/v1/campaigns/{cid}/characters", headers=gm).json()["items"][0]["id"]
    bundle = client.get(f"/v1/characters/{hero}/export", headers=gm).json()
    bundle["level_ups"][0]["body"]["chance_test"]["character_id"] = foreign = _elsewhere(client)["character"]
    r = client.post(f"/v1/campaigns/{cid}/characters/import", json=bundle, headers=gm)
    assert r.status_code == 422, r.text
    assert [str(p) for p in r.json()["errors"][0]["loc"]] == [
        "body",
        "level_ups",
        "0",
        "body",
        "chance_test",
        "character_id",
    ]
    assert foreign in r.json()["detail"]
