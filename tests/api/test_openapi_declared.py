"""Issue 25 item 7: the document says who may call each operation, names its tags, a server
and its licence; its version moves with the contract (CHANGELOG.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from app.api.openapi_doc import CONTRACT_VERSION

ROOT = Path(__file__).resolve().parents[2]
SPEC = json.loads((ROOT / "openapi.json").read_text())
PUBLIC = {"healthz", "readyz", "list_rulesets", "get_ruleset", "accept_invite"}  # an invitation's code lets in


def _operations():
    return [(m, p, op) for p, ops in SPEC["paths"].items() for m, op in ops.items()]


def test_every_operation_declares_its_security():
    declared = {op["operationId"]: op.get("security") for _, _, op in _operations()}
    assert [name for name, security in declared.items() if security is None] == []
    assert {name for name, security in declared.items() if security == []} == PUBLIC
    assert declared["create_campaign"] == [{}, {"HTTPBearer": []}]  # anonymous unless ADMIN_TOKEN is set
    others = set(declared) - PUBLIC - {"create_campaign"}
    assert {name for name in others if declared[name] != [{"HTTPBearer": []}]} == set()


def test_the_tags_used_are_defined_once_with_a_description():
    defined = [t["name"] for t in SPEC["tags"]]
    assert len(defined) == len(set(defined)) and all(t["description"] for t in SPEC["tags"])
    used = [tag for _, _, op in _operations() for tag in op["tags"]]
    assert set(used) == set(defined)
    assert all(len(op["tags"]) == len(set(op["tags"])) for _, _, op in _operations())  # /v1/me had it twice


def test_a_server_and_a_licence_are_declared():
    assert SPEC["servers"] and all(s["url"].startswith("http") for s in SPEC["servers"])
    assert SPEC["info"]["license"]["identifier"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_the_version_is_the_changelogs_newest():
    newest = re.search(r"^## (\d+\.\d+\.\d+) ", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert newest is not None and newest[1] == CONTRACT_VERSION == SPEC["info"]["version"]


def test_encounter_operation_ids_read_well_in_a_flat_sdk():
    ids = {op["operationId"] for _, p, op in _operations() if p.startswith("/v1/encounters/")}
    assert {"start_encounter", "next_encounter_turn", "act_in_encounter", "end_encounter"} <= ids
    assert ids & {"start", "act", "end", "revert", "next_turn", "list_actions"} == set()
