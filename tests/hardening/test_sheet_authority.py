"""Who may change what on a sheet (issue 10 item 7, issue 12 item 9; rules README,
"Who may change what on a sheet"), for the four rulesets.

A player's PATCH of its own character that changes a rule-governed field (karma,
posture, light/dark points, heroism, level, stats, pools and their maxima, mental
health, pending modifiers, challenges…) is a 403 naming the field, and nothing
changes (not even the version); the same value sent again is no change; free
fields stay the owner's. A GM edit of a governed field is allowed and logged as a
`sheet_edit` roll-log entry with each field's before/after, in the same
transaction, with its `log.created` event. The sheet models declare the governed
fields once; the served JSON Schema shows the mark."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.support import assert_problem
from tests.factories import AS, GC, OWNER_SHEETS, RB, RULESETS, SHEETS, WA

# (rule id, ruleset, a player's sheet patch, the governed fields the 403 names)
REFUSED = [
    ("GC-S4-karma-10", GC, {"karma": 10}, ["karma"]),
    ("GC-K5-karma-with-notes", GC, {"karma": -3, "notes": "lucky"}, ["karma"]),
    ("GC-S5-level-1000", GC, {"level": 1000}, ["level"]),
    ("GC-S5-hp", GC, {"hp": 40}, ["hp"]),
    ("GC-S5-hp_max-mp_max", GC, {"hp_max": 500, "mp_max": 80}, ["hp_max", "mp_max"]),
    ("GC-S1-stats-after-creation", GC, {"stats": {"force": 99}}, ["stats.force"]),
    ("GC-S2-intuition", GC, {"intuition": 6}, ["intuition"]),
    ("GC-S6-light-points", GC, {"light_points": 5}, ["light_points"]),
    ("GC-S6-dark-points-removed", GC, {"dark_points": 0}, ["dark_points"]),
    ("GC-S7-mental-health", GC, {"mental_health": 40}, ["mental_health"]),
    ("GC-P5-posture-illumination", GC, {"posture": "illumination", "light_points": 0}, ["light_points", "posture"]),
    ("GC-S3-race", GC, {"race": "succube"}, ["race"]),
    (
        "GC-S9-final-skill",
        GC,
        {"final_skill": {"name": "Nova", "punchline": "Brille !", "cost_kind": "light", "cost_points": 1}},
        ["final_skill"],
    ),
    ("AS-S2-heroism-1000", AS, {"heroism": 1000}, ["heroism"]),
    ("AS-S2-vitality", AS, {"vitality": 5}, ["vitality"]),
    ("AS-S2-vitality_max", AS, {"vitality_max": 99}, ["vitality_max"]),
    ("AS-S1-skill-value", AS, {"skills": {"combat": 50}}, ["skills.combat"]),
    ("AS-S1-new-skill", AS, {"skills": {"pilotage": 9}}, ["skills.pilotage"]),
    ("AS-C5-condition", AS, {"condition": {"dead": True}}, ["condition.dead"]),
    ("AS-S3-tier", AS, {"tier": "boss"}, ["tier"]),
    ("RB-S1-stat", RB, {"stats": {"FOR": 99}}, ["stats.FOR"]),
    ("RB-S1-skill", RB, {"skills": {"escrime": 90}}, ["skills.escrime"]),
    ("RB-S1-crit-chance", RB, {"crit_chance": 50}, ["crit_chance"]),
    ("RB-S3-hp", RB, {"hp": 1}, ["hp"]),
    ("RB-S3-pe_max", RB, {"pe_max": 99}, ["pe_max"]),
    ("WA-T5-pending-modifier", WA, {"pending": {"FOR": 2}}, ["pending.FOR"]),
    (
        "WA-T6-challenge-successes",
        WA,
        {"challenges": {"crochetage": {"successes": 3}}},
        ["challenges.crochetage.successes"],
    ),
    ("WA-T6-challenge-removed", WA, {"challenges": None}, ["challenges.crochetage"]),
    ("WA-S2-level-1000", WA, {"level": 1000}, ["level"]),  # out of bounds too: still no value of it is the player's
    ("WA-S2-level-5", WA, {"level": 5}, ["level"]),
    ("WA-S2-hp", WA, {"hp": 3}, ["hp"]),
    ("WA-S1-stat", WA, {"stats": {"CHA": 6}}, ["stats.CHA"]),
    ("WA-C5-down", WA, {"down": True}, ["down"]),
]

# per ruleset: a patch of free fields only, with governed fields sent again at their
# current value (a merge patch that sends the same value is no change)
FREE = {
    GC: {
        "notes": "Aime les chats",
        "skills": ["escrime", {"name": "lame"}],
        "spells": ["lumiere"],
        "affiliation": "Ordre",
        "talents": ["lecture"],
        "default_posture": "offensive",
        "inventory": {"items": [{"name": "corde", "slots": 1}], "money": 120},
        "karma": 0,
        "level": 1,
        "hp": None,
        "stats": {"force": 68},
    },
    AS: {
        "weapons": [{"name": "hache", "damage_dice": 3}],
        "assets": ["Rusé"],
        "protection": 3,
        "heroism": 3,
        "skills": {"combat": 6},
        "vitality": 20,
    },
    RB: {"weapons": [{"name": "dague", "damage": "1d4"}], "armor": 2, "crit_chance": 5, "stats": {"FOR": 50}},
    WA: {
        "weapons": [{"name": "arc_long", "stat": "DEX", "damage": "1d8"}],
        "level": 1,
        "pending": {},
        "challenges": {"crochetage": {"successes": 0}},
    },
}

# per ruleset: a GM edit of governed fields (and a free one) and the changes it logs
GM_EDITS = {
    GC: (
        {"karma": 3, "stats": {"force": 70}, "posture": "illumination", "notes": "fiat"},
        [
            {"field": "stats.force", "before": 68, "after": 70},
            {"field": "karma", "before": 0, "after": 3},
            {"field": "posture", "before": None, "after": "illumination"},
        ],
    ),
    AS: (
        {"heroism": 5, "vitality": 12, "assets": ["Fils d'Odin"]},
        [{"field": "vitality", "before": 20, "after": 12}, {"field": "heroism", "before": 3, "after": 5}],
    ),
    RB: (
        {"hp": 9, "skills": {"escrime": 25, "pistage": 10}},
        [
            {"field": "skills.escrime", "before": 20, "after": 25},
            {"field": "skills.pistage", "before": None, "after": 10},
            {"field": "hp", "before": 14, "after": 9},
        ],
    ),
    WA: (
        {"pending": {"FOR": -2}, "challenges": {"crochetage": {"successes": 2}}},
        [
            {"field": "pending.FOR", "before": None, "after": -2},
            {"field": "challenges.crochetage.successes", "before": 0, "after": 2},
        ],
    ),
}

# per ruleset: every top-level sheet field, governed or free, as the served schema must
# mark it (a new field fails here until it is classified: the GC-P5 advantage die, when it
# is stored with the posture, is a governed one)
SCHEMA_MARKS = {
    GC: (
        {
            "race",
            "level",
            "stats",
            "intuition",
            "karma",
            "hp",
            "hp_max",
            "mp",
            "mp_max",
            "light_points",
            "dark_points",
            "mental_health",
            "posture",
            "posture_advantage",
            "backlash",
            "final_skill",
        },
        {"default_posture", "skills", "spells", "affiliation", "talents", "inventory", "notes"},
    ),
    AS: ({"skills", "vitality", "vitality_max", "heroism", "tier", "condition"}, {"protection", "weapons", "assets"}),
    RB: ({"stats", "skills", "crit_chance", "hp", "hp_max", "pe", "pe_max"}, {"armor", "weapons"}),
    WA: ({"level", "stats", "hp", "hp_max", "mp", "mp_max", "down", "pending", "challenges"}, {"weapons"}),
}


@pytest.fixture
def owned(client, campaign_factory, player_factory, character_factory):
    """ruleset -> (campaign, owner, the owner's character as the GM created it)."""

    def make(ruleset: str):
        camp = campaign_factory(ruleset)
        owner = player_factory(camp, "Owner")
        return camp, owner, character_factory(camp, OWNER_SHEETS[ruleset], player=owner)

    return make


def sheet_edits(client, camp, headers) -> list[dict[str, Any]]:
    r = client.get(f"/v1/campaigns/{camp.id}/rolls", params={"kind": "sheet_edit"}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["items"]


@pytest.mark.parametrize("ruleset, patch, fields", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_player_patch_of_a_rule_governed_field_is_403_and_changes_nothing(
    client, owned, count_rows, ruleset, patch, fields
):
    camp, owner, hero = owned(ruleset)
    events_before = count_rows("event", campaign_id=camp.id)
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "Renamed", "sheet": patch}, headers=owner.headers)
    body = assert_problem(r, 403, "forbidden")
    assert body["fields"] == fields
    assert all(f in body["detail"] for f in fields), body["detail"]
    stored = client.get(f"/v1/characters/{hero['id']}", headers=owner.headers).json()
    assert stored == hero  # sheet, name and version 1: nothing changed
    assert count_rows("event", campaign_id=camp.id) == events_before
    assert sheet_edits(client, camp, camp.gm) == []
    # the owner's free fields stay its own (governed values sent again unchanged are no change)
    r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": FREE[ruleset]}, headers=owner.headers)
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 2
    for key in {f.split(".")[0] for f in fields}:
        assert r.json()["sheet"].get(key) == hero["sheet"].get(key), key
    assert sheet_edits(client, camp, camp.gm) == []


@pytest.mark.parametrize("ruleset", RULESETS)
def test_gm_edit_of_rule_governed_fields_is_logged_as_sheet_edit(client, owned, count_rows, ruleset):
    camp, owner, hero = owned(ruleset)
    patch, changes = GM_EDITS[ruleset]
    # a GM edit of free fields alone logs nothing
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "Renamed"}, headers=camp.gm)
    assert r.status_code == 200, r.text
    assert sheet_edits(client, camp, camp.gm) == []
    logged_before = count_rows("event", campaign_id=camp.id, type="log.created")

    r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": patch}, headers=camp.gm)
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 3
    for change in changes:
        head, *rest = change["field"].split(".")
        value = r.json()["sheet"][head]
        for key in rest:
            value = value.get(key)
        assert value == change["after"], change
    # visible to the table: the owner reads it in the log, by character and by kind
    entries = sheet_edits(client, camp, owner.headers)
    assert len(entries) == 1
    entry = entries[0]
    assert entry["kind"] == "sheet_edit" and entry["character_id"] == hero["id"]
    assert entry["changes"] == changes
    assert entry["hidden"] is False and entry["rolls"] == []
    assert isinstance(entry["created_at"], str) and entry["id"]
    by_character = client.get(
        f"/v1/campaigns/{camp.id}/rolls", params={"character_id": hero["id"]}, headers=owner.headers
    ).json()["items"]
    assert [e["id"] for e in by_character] == [entry["id"]]
    assert client.get(f"/v1/campaigns/{camp.id}/rolls/{entry['id']}", headers=owner.headers).json() == entry
    assert count_rows("event", campaign_id=camp.id, type="log.created") == logged_before + 1
    assert count_rows("roll_log", campaign_id=camp.id, kind="sheet_edit") == 1
    # and its log.created event, as the table's clients receive it
    stream = client.get(
        f"/v1/campaigns/{camp.id}/events", params={"follow": "false", "after": "0"}, headers=owner.headers
    )
    assert stream.status_code == 200, stream.text
    logged = [
        json.loads(line.removeprefix("data: "))
        for block in stream.text.split("\n\n")
        if "event: log.created" in block.splitlines()
        for line in block.splitlines()
        if line.startswith("data: ")
    ]
    assert logged == [{"entry": entry, "characters_changed": [{"id": hero["id"], "version": 3}]}]


@pytest.mark.parametrize("ruleset", RULESETS)
def test_served_sheet_schema_marks_the_rule_governed_fields(client, ruleset):
    schema = client.get(f"/v1/rulesets/{ruleset}").json()["sheet_schema"]
    marked = {name for name, prop in schema["properties"].items() if prop.get("x-rule-governed") is True}
    governed, free = SCHEMA_MARKS[ruleset]
    assert marked == governed
    assert set(schema["properties"]) - marked == free


# --- a player's creation of its own character ------------------------------------------

# (rule id, ruleset, fields the player may not set at creation, the 403's fields)
CREATION_REFUSED = [
    ("GC-S4-karma-starts-at-0", GC, {"karma": 10}, ["karma"]),
    ("GC-S5-level-starts-at-1", GC, {"level": 1000}, ["level"]),
    ("GC-S6-light-points-start-by-race", GC, {"light_points": 9}, ["light_points"]),
    ("GC-S7-mental-health-starts-at-max", GC, {"mental_health": 50}, ["mental_health"]),
    ("GC-P5-no-posture-at-creation", GC, {"posture": "sepulcrale"}, ["posture"]),
    ("AS-C5-condition", AS, {"condition": {"dying": True}}, ["condition.dying"]),
    ("WA-T5-pending", WA, {"pending": {"DEX": 2}}, ["pending.DEX"]),
    (
        "WA-T6-challenge",
        WA,
        {"challenges": {"vol": {"name": "vol", "successes_needed": 1, "successes": 1, "status": "succeeded"}}},
        ["challenges.vol"],
    ),
    ("WA-S2-level-starts-at-1", WA, {"level": 8}, ["level"]),
]


# what a player builds its character with (governed afterwards)
BUILD = {
    GC: ["stats", "intuition", "hp_max", "mp_max"],
    AS: ["skills", "vitality_max", "heroism"],
    RB: ["stats", "skills", "crit_chance", "hp_max", "pe_max"],
    WA: ["stats", "hp_max"],
}


@pytest.mark.parametrize(
    "ruleset, extra, fields", [c[1:] for c in CREATION_REFUSED], ids=[c[0] for c in CREATION_REFUSED]
)
def test_player_creation_builds_the_sheet_but_governed_starts_stay_the_rules(
    client, campaign_factory, player_factory, count_rows, ruleset, extra, fields
):
    camp = campaign_factory(ruleset)
    owner = player_factory(camp, "Owner")
    url = f"/v1/campaigns/{camp.id}/characters"
    r = client.post(url, json={"name": "Mine", "sheet": {**SHEETS[ruleset], **extra}}, headers=owner.headers)
    body = assert_problem(r, 403, "forbidden")
    assert body["fields"] == fields
    assert count_rows("character", campaign_id=camp.id) == 0
    # the player builds its sheet (stats, pools and their maxima…); starts sent as the rules put them pass
    r = client.post(url, json={"name": "Mine", "sheet": SHEETS[ruleset]}, headers=owner.headers)
    assert r.status_code == 201, r.text
    assert {k: r.json()["sheet"][k] for k in BUILD[ruleset]} == {k: SHEETS[ruleset][k] for k in BUILD[ruleset]}
    # the GM may create it as it likes
    r = client.post(
        url, json={"name": "GM's", "player_id": owner.id, "sheet": {**SHEETS[ruleset], **extra}}, headers=camp.gm
    )
    assert r.status_code == 201, r.text
