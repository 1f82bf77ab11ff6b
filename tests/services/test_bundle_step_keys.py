"""Issue 27 item 2's tail, for bundles: a campaign bundle exported before step keys existed (its
fight steps have no `key`) imports with the keys migration 0014 gives the stored steps, from the
same map (the migration's own, app/core/old_step_keys.py); a key already there is kept, a step of
a text the map does not know stays without one. Run on SQLite, and on PostgreSQL by its lane."""

from __future__ import annotations

import copy
from typing import Any

from app.core import old_step_keys
from tests.api.test_export_import import as_imported, canonical
from tests.factories import wa_fighter
from tests.fixtures import ids
from tests.services.test_migration_step_keys import _fought, _migration, _ordered, _unkeyed


def _export(t, campaign_id: str, gm: dict[str, str]) -> dict[str, Any]:
    r = t.client.get(f"/v1/campaigns/{campaign_id}/export", headers=gm)
    assert r.status_code == 200, r.text
    return r.json()


def _import(t, bundle: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The bundle imported: the new campaign's export, and its GM's headers."""
    r = t.client.post("/v1/campaigns/import", json=bundle)
    assert r.status_code == 201, r.text
    gm = {"Authorization": f"Bearer {r.json()['gm_token']}"}
    return _export(t, r.json()["id"], gm), gm


def _history_keys(t, encounter_id: str, gm: dict[str, str]) -> list[list[str | None]]:
    """The fight's history as a client reads it (`GET …/actions`): each action's step keys."""
    r = t.client.get(f"/v1/encounters/{encounter_id}/actions", params={"limit": 500}, headers=gm)
    assert r.status_code == 200, r.text
    return [[s.get("key") for s in a["steps"]] for a in r.json()["items"]]


def _steps(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for e in bundle["log"] if e["kind"] == "combat" for s in e["body"]["steps"]]


def test_issue27_item2_a_bundle_exported_before_step_keys_imports_with_the_keys_of_its_export(table):
    t = table("worlds-awakening")
    eid = _fought(t)
    original = _export(t, t.c.id, t.gm)
    keys = {s["key"] for s in _steps(original)}
    assert {"tie_d20_roll_off_highest_first", "attack_test", "damage", "down_0_hp", "condition_added"} <= keys
    assert {"turn_ends", "turn_starts", "new_round"} <= keys and len(_steps(original)) >= 10
    old = {**original, "log": [_unkeyed(e) if e["kind"] == "combat" else e for e in original["log"]]}
    assert all("key" not in s for s in _steps(old)) and old["log"] != original["log"]
    again, gm = _import(t, old)
    assert _ordered(canonical(again)) == _ordered(canonical(as_imported(original)))  # the keys, in wire order
    assert _history_keys(t, again["encounters"][0]["id"], gm) == _history_keys(t, eid, t.gm)


def test_issue27_item2_an_imported_key_is_kept_and_an_unknown_text_gets_none(table):
    t = table("worlds-awakening")
    _fought(t)
    original = _export(t, t.c.id, t.gm)
    old = copy.deepcopy(original)
    combat = [e for e in old["log"] if e["kind"] == "combat"]
    kept, reworded, stripped = combat[1]["body"]["steps"][0], combat[2]["body"]["steps"][0], combat[3]["body"]["steps"]
    kept["key"] = "a_client_s_own_key"  # not the map's: kept as it is
    del reworded["key"]
    reworded["what"] = "a text reworded since"  # not in the map: no key
    for step in stripped:
        del step["key"]
    again, _gm = _import(t, old)
    steps = [e["body"]["steps"] for e in again["log"] if e["kind"] == "combat"]
    assert steps[1][0]["key"] == "a_client_s_own_key"
    assert "key" not in steps[2][0] and steps[2][0]["what"] == "a text reworded since"
    at = [i for i, e in enumerate(original["log"]) if e["kind"] == "combat"]
    before, after = canonical(as_imported(original))["log"], canonical(again)["log"]
    assert _ordered(after[at[3]]) == _ordered(before[at[3]])  # its keys back, in the wire order
    assert [e for i, e in enumerate(after) if i not in (at[1], at[2])] == [
        e for i, e in enumerate(before) if i not in (at[1], at[2])
    ]


def test_issue27_item2_the_import_keys_a_step_exactly_as_the_migration_does():
    """One definition: the app's import reads migration 0014's own `filled` (no second copy of the map)."""
    migration = _migration()
    step = {"rule": "AS-C5", "what": "mourant: counted in the fight", "rounds_left": 3}
    body = {"steps": [step], "reroll": {"steps": [{"rule": "GC-P2", "what": "offensive posture"}]}}
    assert old_step_keys.with_step_keys(body) == migration.filled(body)[0]
    assert list(old_step_keys.with_step_keys(body)["steps"][0]) == ["rule", "key", "what", "rounds_left"]
    assert old_step_keys._migration().EXACT == migration.EXACT
    assert old_step_keys._migration().PATTERNS == migration.PATTERNS
