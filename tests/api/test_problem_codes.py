"""Issue 25 item 5: every problem has a stable `code`, declared once (app.kit.errors.CODES) with its
status, meaning and typed members; every raise site's class (or the code it names) is declared and
answers with its code's status; the OpenAPI enum and docs/problem-codes.md are the
registry's; `type` is built from the code."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import typing
from pathlib import Path

import pytest

import app.main  # noqa: F401  # every module imported, every code registered
from app.api.openapi_doc import own_properties
from app.api.problems import TYPE_BASE, code_status, codes_table, status_of
from app.kit.errors import CODES, AppError
from app.openapi import render
from tests.api.support import PROBLEM, assert_problem, bearer

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
SPEC = json.loads(render())
SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


def _module(path: Path):
    return importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))


def _raise_sites():
    """(where, raised callable, the code it names or None) of every `raise X(...)` in app/."""
    for path in sorted(APP.rglob("*.py")):
        tree = ast.parse(path.read_text())
        module = None
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            module = module or _module(path)
            func = node.exc.func
            dotted = ast.unparse(func)
            target: typing.Any = module
            for part in dotted.split("."):
                target = getattr(target, part, None)
            named = next((k.value for k in node.exc.keywords if k.arg == "code"), None)
            code = named.value if isinstance(named, ast.Constant) else named
            extra = next((k.value for k in node.exc.keywords if k.arg == "extra"), None)
            members = (
                [k.value for k in extra.keys if isinstance(k, ast.Constant)] if isinstance(extra, ast.Dict) else []
            )
            yield f"{path.relative_to(ROOT)}:{node.lineno} {dotted}", target, code, members


def _error_class(target) -> type[AppError] | None:
    """The AppError class a raise site makes: the class itself, or what a helper returns."""
    if isinstance(target, type):
        return target if issubclass(target, AppError) else None
    if callable(target):
        returned = typing.get_type_hints(target).get("return")
        if isinstance(returned, type) and issubclass(returned, AppError):
            return returned
    return None


def test_every_raise_site_has_a_declared_code_of_its_own_status():
    checked, wrong = 0, []
    for where, target, code, members in _raise_sites():
        cls = _error_class(target)
        if cls is None:
            assert code is None, f"{where}: a code on a raise that is not an AppError"
            continue
        checked += 1
        if code is not None and not isinstance(target, type):
            wrong.append(f"{where}: `code=` passed to a helper, not to an error class")
            continue
        if code is not None and not isinstance(code, str):
            wrong.append(f"{where}: the code is not a literal")
            continue
        named, code = code is not None, code or cls.code
        if code not in CODES:
            wrong.append(f"{where}: {code!r} is not in CODES")
        elif not issubclass(cls, CODES[code].family) and status_of(cls) != code_status(code):
            wrong.append(f"{where}: {code!r} answers {code_status(code)}, {cls.__name__} {status_of(cls)}")
        elif set(members) - set(CODES[code].members) - {"errors"}:  # each member typed in the spec
            wrong.append(f"{where}: {code!r} does not declare {sorted(set(members) - set(CODES[code].members))}")
        elif named and set(CODES[code].always) - set(members):  # required in the spec: always sent
            wrong.append(f"{where}: {code!r} always sends {sorted(set(CODES[code].always) - set(members))}")
    assert wrong == []
    assert checked > 250  # the ~300 refusals of app/ were read


def test_every_error_class_has_a_declared_code_of_its_status():
    seen = set()

    def walk(cls):
        for sub in cls.__subclasses__():
            seen.add(sub)
            walk(sub)

    walk(AppError)
    assert len(seen) > 20
    for cls in seen | {AppError}:
        assert cls.code in CODES, cls
        assert code_status(cls.code) == status_of(cls), cls


def test_codes_are_snake_case_words_with_a_meaning_and_typed_members():
    assert len(CODES) > 60
    for code, info in CODES.items():
        assert SNAKE.fullmatch(code) and info.name == code and info.meaning.endswith((".", ")"))
        assert all(isinstance(schema, dict) for schema in info.members.values())
    for documented in ("not_your_turn", "encounter_ended", "not_latest_action", "already_reverted", "stale_version"):
        assert documented in CODES  # API.md's examples
    for documented in ("dice_needed", "dice_left_over", "die_out_of_range", "rule_governed_field", "unaffordable"):
        assert documented in CODES
    assert {"validation_failed", "rate_limited", "token_revoked"} <= set(CODES)


def test_the_spec_enum_is_the_registry():
    problem = SPEC["components"]["schemas"]["Problem"]
    assert problem["properties"]["code"]["enum"] == sorted(CODES)
    assert "code" in problem["required"]


def test_docs_table_is_the_registry():
    assert (ROOT / "docs" / "problem-codes.md").read_text() == codes_table()
    # the one table: the README and docs/clients.md link to it rather than copy it
    assert "docs/problem-codes.md" in (ROOT / "README.md").read_text()
    assert "(problem-codes.md)" in (ROOT / "docs" / "clients.md").read_text()
    for code in CODES:
        assert f"`{code}`" in codes_table()


def test_issue25_item5_type_is_built_from_the_code(client, campaign):
    r = client.get("/v1/nowhere")
    body = assert_problem(r, 404, "no-route")
    assert body["code"] == "no_route" and body["type"] == TYPE_BASE + "no-route"
    r = client.delete("/v1/me", headers=campaign.gm)
    assert assert_problem(r, 405, "method-not-allowed")["code"] == "method_not_allowed"
    r = client.get("/v1/me")
    assert assert_problem(r, 401, "token-missing")["code"] == "token_missing"
    r = client.get("/v1/me", headers=bearer("nobody"))
    assert assert_problem(r, 401, "token-invalid")["code"] == "token_invalid"


def test_issue25_item5_a_stale_if_match_is_stale_version_with_current_version(client, campaign):
    url = f"/v1/campaigns/{campaign.id}"
    r = client.patch(url, json={"name": "x"}, headers={**campaign.gm, "If-Match": '"999"'})
    body = assert_problem(r, 412, "stale-version")
    assert body["code"] == "stale_version" and isinstance(body["current_version"], int)


def test_issue25_item5_a_body_that_does_not_fit_is_validation_failed(client, campaign):
    r = client.post(f"/v1/campaigns/{campaign.id}/players", json={"name": 5}, headers=campaign.gm)
    assert r.headers["content-type"] == PROBLEM
    assert r.status_code == 422 and r.json()["code"] == "validation_failed" and r.json()["errors"]


@pytest.mark.parametrize("code", sorted(CODES))
def test_each_code_has_a_problem_schema_in_the_spec_typing_its_members(code):
    schemas = SPEC["components"]["schemas"]
    holders = [
        name
        for name, schema in schemas.items()
        if name.endswith("Problem") and name != "Problem" and code in own_properties(schema)["code"]["enum"]
    ]
    assert len(holders) == 1, (code, holders)
    assert schemas[holders[0]]["allOf"][0] == {"$ref": "#/components/schemas/Problem"}
    properties = own_properties(schemas[holders[0]])
    assert properties["status"]["enum"] == [code_status(code)]
    for member, schema in CODES[code].members.items():
        assert properties[member] == schema, (code, member)


def test_helpers_that_make_errors_say_so():
    """A raise through a helper (`raise unsupported(...)`) is checked through its return annotation."""
    found = [
        (where, target)
        for where, target, _, _ in _raise_sites()
        if callable(target) and not isinstance(target, type) and inspect.isfunction(target)
    ]
    assert found and all(_error_class(t) is not None for _, t in found), [w for w, t in found if not _error_class(t)]


def test_each_status_declared_is_the_union_of_its_codes_and_default_is_any_problem():
    """Issue 25 item 2: statuses, not ranges; each one's body is its codes' schemas, by `code`."""
    schemas = SPEC["components"]["schemas"]
    for path, methods in SPEC["paths"].items():
        for method, op in methods.items():
            responses = op["responses"]
            assert not [s for s in responses if s.endswith("XX")], (method, path)
            for status, response in responses.items():
                if status != "default" and (not status.isdigit() or int(status) < 400):
                    continue
                schema = response["content"]["application/problem+json"]["schema"]
                refs = [schema] if "$ref" in schema else schema["oneOf"]
                names = [r["$ref"].rsplit("/", 1)[1] for r in refs]
                codes = [c for name in names for c in own_properties(schemas[name])["code"]["enum"]]
                wanted = (405, 500) if status == "default" else (int(status),)  # default: what none declares
                assert sorted(codes) == sorted(c for c in CODES if code_status(c) in wanted), (path, status)
                if "discriminator" in schema:
                    assert sorted(schema["discriminator"]["mapping"]) == sorted(codes)


def test_event_stream_error_frames_carry_declared_codes():
    from app.api.event_hub import REVOKED_FRAME, error_frame

    for frame in (REVOKED_FRAME, error_frame("the database is unavailable")):
        data = json.loads(frame.decode().split("data: ", 1)[1])
        assert data["code"] in CODES and data["status"] == code_status(data["code"])


# --- the codes of a few situations, through HTTP (each was a family-wide type before) ---------------


def test_issue25_item5_a_players_change_of_a_rule_governed_field_is_rule_governed_field(
    client, campaign_factory, player_factory, character_factory
):
    from tests.factories import GC, sheet

    camp = campaign_factory(GC)
    alice = player_factory(camp)
    hero = character_factory(camp, sheet(GC), player=alice)
    r = client.patch(f"/v1/characters/{hero['id']}", json={"sheet": {"hp_max": 999}}, headers=bearer(alice.token))
    body = assert_problem(r, 403, "rule-governed-field")
    assert body["fields"] == ["hp_max"]


def test_issue25_item5_too_few_table_dice_is_dice_needed_with_the_die(client, campaign_factory, character_factory):
    from tests.factories import GC, sheet

    camp = campaign_factory(GC)
    hero = character_factory(camp, sheet(GC))
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": []}, headers=camp.gm)
    body = assert_problem(r, 422, "dice-needed")
    assert body["needed"]["index"] == 0 and body["needed"]["die"] == "d100"


def test_issue25_item5_an_ended_encounter_is_encounter_ended_and_an_unknown_target_unknown_id(
    client, campaign_factory, character_factory
):
    from tests.factories import GC, sheet

    camp = campaign_factory(GC)
    hero = character_factory(camp, sheet(GC), name="Aiko")
    brute = character_factory(camp, sheet(GC), name="Brute", kind="npc")
    body = {"name": "Fight", "combatants": [{"character_id": hero["id"]}, {"character_id": brute["id"]}]}
    eid = client.post(f"/v1/campaigns/{camp.id}/encounters", json=body, headers=camp.gm).json()["id"]
    r = client.post(f"/v1/encounters/{eid}/next-turn", json={}, headers=camp.gm)
    assert assert_problem(r, 409, "encounter-status")["encounter_status"] == "setup"
    assert client.post(f"/v1/encounters/{eid}/start", json={}, headers=camp.gm).status_code == 201
    state = client.get(f"/v1/encounters/{eid}", headers=camp.gm).json()
    actor = state["current"]["combatant_id"]
    r = client.post(
        f"/v1/encounters/{eid}/actions",
        json={"type": "attack", "actor_id": actor, "target_id": "nobody"},
        headers=camp.gm,
    )
    assert assert_problem(r, 422, "unknown-id")["code"] == "unknown_id"
    assert client.post(f"/v1/encounters/{eid}/end", json={}, headers=camp.gm).status_code == 200
    r = client.post(f"/v1/encounters/{eid}/next-turn", json={}, headers=camp.gm)
    assert assert_problem(r, 409, "encounter-ended")["code"] == "encounter_ended"
