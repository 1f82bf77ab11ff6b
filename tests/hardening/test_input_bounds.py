"""Issue 10, items 4, 6 and 10: bodies nested too deep, too many dice in one
request and loose input are refused with a 422 problem before anything is
rolled or stored (never a 500)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.api.limits import json_too_deep
from tests.api.support import assert_problem, assert_validation
from tests.factories import GC_MINIMAL, SHEETS

MAX_DEPTH = 32
MAX_DICE = 1000


def nested(depth: int, leaf: Any = 1) -> Any:
    """A list nesting `depth` levels deep (`depth` 0: the leaf itself)."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def depth_of(value: Any) -> int:
    """Containers open at the deepest point (an independent oracle of the middleware's scan)."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def sheet_nested(list_depth: int) -> dict[str, Any]:
    """A valid Great Cosmos sheet whose free-form skill entry holds a list nested `list_depth` deep."""
    return {**GC_MINIMAL, "skills": [{"name": "x", "notes": nested(list_depth)}]}


def post_json(client, url: str, body: Any, headers: dict[str, str], method: str = "POST"):
    return post_text(client, url, json.dumps(body), headers, method)


def post_text(client, url: str, text: str, headers: dict[str, str], method: str = "POST"):
    return client.request(method, url, content=text.encode(), headers={**headers, "Content-Type": "application/json"})


def assert_depth_refused(r) -> None:
    body = assert_validation(r, [["body"]])
    assert str(MAX_DEPTH) in body["errors"][0]["msg"]
    assert str(MAX_DEPTH) in body["detail"]


# --- item 4: JSON depth ---------------------------------------------------------------


def test_a_sheet_nested_254_levels_is_refused_on_create(client, campaign, count_rows):
    body = {"name": "Deep", "sheet": sheet_nested(254)}
    r = post_json(client, f"/v1/campaigns/{campaign.id}/characters", body, campaign.gm)
    assert_depth_refused(r)
    assert count_rows("character", campaign_id=campaign.id) == 0


def test_a_sheet_nested_254_levels_is_refused_on_patch(client, campaign, hero):
    r = post_json(client, f"/v1/characters/{hero['id']}", {"sheet": sheet_nested(254)}, campaign.gm, "PATCH")
    assert_depth_refused(r)
    assert client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm).json()["version"] == hero["version"]


def test_options_nested_960_levels_with_an_idempotency_key_is_refused(client, campaign, hero, count_rows):
    # written by hand: json.dumps itself would hit the recursion limit here
    text = '{"stat": "force", "seed": 1, "options": ' + "[" * 960 + "1" + "]" * 960 + "}"
    r = post_text(client, f"/v1/characters/{hero['id']}/tests", text, {**campaign.gm, "Idempotency-Key": "deep-1"})
    assert_depth_refused(r)
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_a_body_exactly_32_deep_is_accepted_and_33_is_not(client, campaign):
    # body (1) > sheet (2) > skills (3) > entry (4) > notes: lists nested 28 more = 32
    body = {"name": "At the bound", "sheet": sheet_nested(MAX_DEPTH - 4)}
    assert depth_of(body) == MAX_DEPTH
    r = post_json(client, f"/v1/campaigns/{campaign.id}/characters", body, campaign.gm)
    assert r.status_code == 201, r.text
    assert r.json()["sheet"]["skills"][0]["notes"] == nested(MAX_DEPTH - 4)

    deeper = {"name": "Past the bound", "sheet": sheet_nested(MAX_DEPTH - 3)}
    assert depth_of(deeper) == MAX_DEPTH + 1
    assert_depth_refused(post_json(client, f"/v1/campaigns/{campaign.id}/characters", deeper, campaign.gm))

    # brackets inside strings (after an escaped quote too) are text, not nesting
    for name in ["[" * 40 + "{" * 40, '\\"' + "{[" * 40, "\\" + "[" * 40]:
        r = post_json(
            client, f"/v1/campaigns/{campaign.id}/characters", {"name": name, "sheet": GC_MINIMAL}, campaign.gm
        )
        assert r.status_code == 201, r.text
        assert r.json()["name"] == name


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ ,:ab\u00e9\u2028'),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a', max_size=3), inner, max_size=3)
        ),
        max_leaves=30,
    ),
    limit=st.integers(0, 8),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 0, 2]),
)
def test_the_depth_scan_agrees_with_a_parse_of_the_json(value, limit, ascii_only, indent):
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode()
    assert json_too_deep(text, limit) == (depth_of(value) > limit)


# --- item 6: the dice of one request ------------------------------------------------------


def test_a_roll_of_1600_dice_is_refused_and_nothing_is_logged_1000_are_rolled(client, campaign, count_rows):
    expression = "+".join(["100d1000kh1"] * 16)  # 1,600 dice within the 200-character limit
    assert len(expression) <= 200
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls", json={"expression": expression, "seed": 1}, headers=campaign.gm
    )
    body = assert_problem(r, 422, "too-many-dice")
    assert "1000" in body["detail"] and "1600" in body["detail"]
    assert body["errors"] == [{"loc": ["body", "expression"], "msg": body["detail"]}]
    assert count_rows("roll_log", campaign_id=campaign.id) == 0
    assert count_rows("event", campaign_id=campaign.id) == 0

    expression = "+".join(["100d6"] * 10)
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls", json={"expression": expression, "seed": 1}, headers=campaign.gm
    )
    assert r.status_code == 201, r.text
    assert len(r.json()["rolls"]) == MAX_DICE
    assert count_rows("roll_log", campaign_id=campaign.id) == 1


# --- item 10: loose input -----------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, loc",
    [
        ({"seed": "1"}, ["body", "seed"]),
        ({"seed": 1.0}, ["body", "seed"]),
        ({"seed": True}, ["body", "seed"]),
        ({"dice": [True, 3, 4]}, ["body", "dice", 0]),
        ({"dice": [1.0, 3, 4]}, ["body", "dice", 0]),
        ({"dice": ["1", 3, 4]}, ["body", "dice", 0]),
    ],
)
def test_seed_and_table_dice_are_strict_integers_on_free_rolls(client, campaign, count_rows, extra, loc):
    r = client.post(f"/v1/campaigns/{campaign.id}/rolls", json={"expression": "3d6", **extra}, headers=campaign.gm)
    assert_validation(r, [loc])
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


@pytest.mark.parametrize(
    "extra, loc",
    [
        ({"seed": "1"}, ["body", "seed"]),
        ({"dice": [True]}, ["body", "dice", 0]),
        ({"dice": [1.0]}, ["body", "dice", 0]),
    ],
)
def test_seed_and_table_dice_are_strict_integers_on_tests(client, campaign, hero, count_rows, extra, loc):
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", **extra}, headers=campaign.gm)
    assert_validation(r, [loc])
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


@pytest.mark.parametrize(
    "expression",
    [
        "1d6kh0",
        "4d6kl0",
        "4d6dh4",
        "4d6dl4",
        "1d6dl1",  # no die left
        "１d６",
        "٣d٦",
        "3d٦",
        "1d6+٣",
        "३d6",  # non-ASCII digits
        "1d6\u00a0+2",  # non-ASCII space
    ],
)
def test_expressions_that_leave_no_die_or_are_not_ascii_are_refused(client, campaign, count_rows, expression):
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls", json={"expression": expression, "seed": 1}, headers=campaign.gm
    )
    body = assert_problem(r, 422, "invalid-dice-expression")
    assert body["errors"][0]["loc"] == ["body", "expression"]
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_purpose_refuses_control_characters_but_keeps_any_script(client, campaign, count_rows):
    for purpose in ["a\x00b", "line\nbreak", "tab\there", "bell\x07", "del\x7f", "nel\x85", "csi\x9b"]:
        r = client.post(
            f"/v1/campaigns/{campaign.id}/rolls",
            json={"expression": "1d6", "seed": 1, "purpose": purpose},
            headers=campaign.gm,
        )
        assert_validation(r, [["body", "purpose"]])
    assert count_rows("roll_log", campaign_id=campaign.id) == 0
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls",
        json={"expression": "1d6", "dice": [4], "purpose": "Épée de Þór — 攻撃"},
        headers=campaign.gm,
    )
    assert r.status_code == 201, r.text
    assert r.json()["purpose"] == "Épée de Þór — 攻撃"


@pytest.mark.parametrize(
    "ruleset, body",
    [
        ("asgard", {"skill": "survie", "difficulty": "moyen"}),
        ("rulebook-d100", {"stat": "FOR"}),
    ],
)
@pytest.mark.parametrize("die", [True, 1.0, "1"])
def test_a_participants_table_dice_are_strict_integers(
    client, campaign_factory, character_factory, count_rows, ruleset, body, die
):
    camp = campaign_factory(ruleset)
    ids = [character_factory(camp, SHEETS[ruleset], name=n)["id"] for n in ("A", "B")]
    participants = [{"character_id": ids[0], "dice": [die, 3, 4]}, {"character_id": ids[1]}]
    r = client.post(
        f"/v1/campaigns/{camp.id}/tests/group", json={**body, "participants": participants, "seed": 1}, headers=camp.gm
    )
    assert_validation(r, [["body", "participants", 0, "dice", 0]])
    assert count_rows("roll_log", campaign_id=camp.id) == 0
