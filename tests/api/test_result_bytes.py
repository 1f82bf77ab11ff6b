"""Issue 23 ("adapters return the result models"): the bytes of every ruleset operation's
answer are kept, recorded for fixed dice and seeds (tests/api/data/result_bytes.json).

The scenario is test_result_models.py's: every operation of the four rulesets (tests, odds,
rerolls, actions, level-ups, oppositions, group tests). Each rolling operation is sent with
an `Idempotency-Key`; its answer must be byte for byte the recorded one, its replay and
the GM's read of its roll-log entry the same bytes. The clock of the roll log is fixed, one
entry in three on a whole second (a timestamp keeps its six digits); the ids the server
draws are numbered in the order they appear (`<id1>`, …), so the record holds whatever
else the run draws.

`RECORD_RESULT_BYTES=1` writes the record again (only on purpose: the bytes are the contract)."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.services import operations
from tests.api.test_result_models import (
    ACTIONS,
    GROUP,
    LEVEL_UPS,
    ODDS,
    OPPOSED,
    PLAYS,
    REROLL,
    TESTS,
    Table,
    Wire,
)

RECORD = Path(__file__).parent / "data" / "result_bytes.json"
ROLLING = {TESTS, REROLL, ACTIONS, LEVEL_UPS, OPPOSED, GROUP}
ID = re.compile(r"\b[0-9a-f]{32}\b")


class Clock:
    """The roll log's `now`: a second later each call, every third one on a whole second."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> datetime:
        self.calls += 1
        micro = 0 if self.calls % 3 == 0 else (self.calls * 137_911) % 1_000_000
        return datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC) + timedelta(seconds=self.calls, microseconds=micro)


class Recorder(Wire):
    """`Wire`, keeping the bytes of each ruleset operation (and checking its replay and log read)."""

    def __init__(self, client):
        super().__init__(client)
        self.answers: list[dict[str, Any]] = []

    def call(self, ruleset: str, method: str, route: str, headers: dict, body: Any = None, **params: str) -> dict:
        if method != "POST" or route not in ROLLING | {ODDS}:
            return super().call(ruleset, method, route, headers, body, **params)
        path = route.format(**params)
        key = {"Idempotency-Key": f"bytes-{len(self.answers)}"} if route in ROLLING else {}
        r = self.client.post(path, json=body, headers={**headers, **key})
        assert r.status_code == (201 if key else 200), (route, body, r.text)
        if key:
            replay = self.client.post(path, json=body, headers={**headers, **key})
            assert replay.status_code == 201 and replay.content == r.content, (route, body)
            entry = self.client.get(f"/v1/campaigns/{params['campaign_id']}/rolls/{r.json()['id']}", headers=headers)
            assert entry.status_code == 200 and entry.content == r.content, (route, body)
        self.answers.append({"ruleset": ruleset, "route": route, "request": body, "answer": r.content.decode()})
        self.operations.add((ruleset, method, route))
        return r.json()


def numbered(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers with every id the server drew named by its order of appearance."""
    names: dict[str, str] = {}

    def name(match: re.Match) -> str:
        return names.setdefault(match.group(0), f"<id{len(names) + 1}>")

    return [json.loads(ID.sub(name, json.dumps(a, ensure_ascii=False))) for a in answers]


def test_issue23_every_ruleset_operation_answers_the_recorded_bytes(
    client, campaign_factory, character_factory, monkeypatch
):
    monkeypatch.setattr(operations, "utcnow", Clock())
    wire = Recorder(client)
    for ruleset, play_it in PLAYS.items():
        play_it(Table(wire, campaign_factory(ruleset), character_factory))
    answers = numbered(wire.answers)
    assert any(a["answer"].count('.000000Z"') for a in answers)  # whole seconds were met
    if os.environ.get("RECORD_RESULT_BYTES"):
        RECORD.write_text(json.dumps(answers, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        pytest.skip("recorded")
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    assert [(a["ruleset"], a["route"], a["request"]) for a in answers] == [
        (a["ruleset"], a["route"], a["request"]) for a in recorded
    ]
    for got, want in zip(answers, recorded):
        assert got["answer"] == want["answer"], (got["ruleset"], got["route"], got["request"])
