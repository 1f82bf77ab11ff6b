"""Luck measured against the exact odds (`GET /v1/campaigns/{cid}/stats`).

Each test logs its figures as it is rolled (`LOG_FIGURES`: its outcome, the exact probability of
each outcome and of success, its dice by type), so the statistics are two SQL aggregates over
the campaign's tests, grouped by character, sent in one round trip (`fetch_together`): the
campaign's figures are the sum of its characters'. Expected counts are the sums of each test's
probabilities; the luck score is (observed − expected) / sd with sd = sqrt(Σ p(1 − p)), the exact
variance of a sum of independent tests (an AS-H2 reroll is a test with its own odds: counted as
one). Tests logged before their figures were recorded (before migration 0012; AS-H2 rerolls before
they were) count in `tests` and `tests_without_odds`, in nothing else.
A player counts what its log shows: no hidden GM entry, nothing about a character it does not
see whole."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, case, func, or_, select, union_all
from sqlalchemy.types import NullType
from sqlmodel import Session

from app.core.prepared import Prepared, fetch_together
from app.models.tables import LogEntry, core_table
from app.rulesets.contract.adapter import OUTCOMES, SUCCESS_OUTCOMES
from app.services.records import Principal
from app.services.uow import CharacterRepository
from app.services.visibility import check_visible, in_hiding_from_player, not_seen_whole

_log = core_table(LogEntry)
_DIE = re.compile(r"d(\d+)")


def _filtered(query: Select[Any], *, by_character: bool, with_hidden: bool, since: bool) -> Select[Any]:
    query = query.where(_log.c.campaign_id == bindparam("campaign_id"), _log.c.kind == "test")
    if by_character:
        query = query.where(_log.c.character_id == bindparam("character_id"))
    if not with_hidden:  # a player: its log's entries only (tests are about their own character)
        query = query.where(
            _log.c.hidden == False,  # noqa: E712 (SQL expression)
            _log.c.character_id.not_in(in_hiding_from_player()),
            _log.c.character_id.not_in(not_seen_whole()),
        )
    if since:
        query = query.where(_log.c.created_at >= bindparam("since"))
    return query


# grouped by an expression of the character, not the column: a planner would read the whole log in
# the order of the character index to group without sorting, instead of the campaign's tests only
_CHARACTER = func.coalesce(_log.c.character_id, "").label("character")


def _total(value: ColumnElement[Any]) -> Any:
    """The sum of a float column (0 when none), left untyped: the drivers hand back floats
    (a `Float` result would need the column's type code, which a prepared plan does not have)."""
    return func.coalesce(func.sum(value, type_=NullType()), 0.0, type_=NullType())


def _count(condition: ColumnElement[bool]) -> Any:
    return func.sum(case((condition, 1), else_=0))


@cache
def _queries(by_character: bool, with_hidden: bool, since: bool) -> tuple[Prepared, Prepared]:
    """The two aggregates for one combination of filters, prepared once: per character, the
    tests and their figures; per character and die type, the dice's count and sum."""
    p = _log.c.p_any_success
    figures = select(
        _CHARACTER,
        func.count(),
        func.count(p),
        *(_count(_log.c.outcome == name) for name in OUTCOMES),
        *(_total(getattr(_log.c, f"p_{name}")) for name in OUTCOMES),
        _count(and_(p.is_not(None), or_(*(_log.c.outcome == name for name in SUCCESS_OUTCOMES)))),
        _total(p),
        _total(p * (1 - p)),
    )
    flags = {"by_character": by_character, "with_hidden": with_hidden, "since": since}
    figures = _filtered(figures, **flags).group_by(_CHARACTER)
    dice = []
    for slot in ("die_a", "die_b"):
        die, count, total = (getattr(_log.c, f"{slot}{part}") for part in ("", "_count", "_total"))
        q = select(_CHARACTER, die.label("die"), func.sum(count), func.sum(total)).where(die.is_not(None))
        dice.append(_filtered(q, **flags).group_by(_CHARACTER, die))
    return Prepared(figures), Prepared(union_all(*dice))


def _luck(observed: int, expected: float, variance: float) -> float | None:
    return None if variance <= 0 else (observed - expected) / math.sqrt(variance)


class _Sums:
    """One character's (or the campaign's) sums, as the aggregates give them."""

    def __init__(self) -> None:
        self.tests = self.with_odds = self.successes = 0
        self.observed = dict.fromkeys(OUTCOMES, 0)
        self.expected = dict.fromkeys(OUTCOMES, 0.0)
        self.p_success = self.variance = 0.0
        self.dice: dict[str, list[int]] = {}

    def add_row(self, row: Sequence[Any]) -> None:
        n = len(OUTCOMES)
        self.tests += int(row[0])
        self.with_odds += int(row[1])
        for i, name in enumerate(OUTCOMES):
            self.observed[name] += int(row[2 + i] or 0)
            self.expected[name] += float(row[2 + n + i] or 0)
        self.successes += int(row[2 + 2 * n] or 0)
        self.p_success += float(row[3 + 2 * n] or 0)
        self.variance += float(row[4 + 2 * n] or 0)

    def add_dice(self, die: str, count: int, total: int) -> None:
        sums = self.dice.setdefault(die, [0, 0])
        sums[0] += int(count or 0)
        sums[1] += int(total or 0)

    def merge(self, other: _Sums) -> None:
        self.tests += other.tests
        self.with_odds += other.with_odds
        self.successes += other.successes
        for name in OUTCOMES:
            self.observed[name] += other.observed[name]
            self.expected[name] += other.expected[name]
        self.p_success += other.p_success
        self.variance += other.variance
        for die, (count, total) in other.dice.items():
            self.add_dice(die, count, total)

    def out(self) -> dict[str, Any]:
        sd = math.sqrt(self.variance)
        return {
            "tests": self.tests,
            "tests_without_odds": self.tests - self.with_odds,
            "outcomes": {name: {"observed": self.observed[name], "expected": self.expected[name]} for name in OUTCOMES},
            "successes": {
                "observed": self.successes,
                "expected": self.p_success,
                "sd": sd,
                "luck": _luck(self.successes, self.p_success, self.variance),
            },
            "dice": {die: _die_out(die, count, total) for die, (count, total) in sorted(self.dice.items(), key=_order)},
        }


def _order(item: tuple[str, list[int]]) -> tuple[int, str]:
    m = _DIE.fullmatch(item[0])
    return (int(m.group(1)) if m else 0, item[0])


def _die_out(die: str, count: int, total: int) -> dict[str, Any]:
    m = _DIE.fullmatch(die)
    return {
        "count": count,
        "mean": total / count if count else None,
        "expected_mean": (int(m.group(1)) + 1) / 2 if m else None,  # a fair dN: 1..N
    }


def campaign_stats(
    session: Session,
    principal: Principal,
    campaign_id: str,
    *,
    character_id: str | None = None,
    since: datetime | None = None,
) -> dict[str, Any]:
    """The campaign's tests, per character and in all: observed against the exact odds."""
    if character_id is not None:  # an unknown id (or one the caller may not know of) is the usual 404
        conn = session.connection()
        check_visible(conn, principal, CharacterRepository(conn, campaign_id).get(character_id))
    figures, dice = _queries(character_id is not None, principal.is_gm, since is not None)
    params: dict[str, Any] = {"campaign_id": campaign_id, "player_id": principal.player_id}
    if character_id is not None:
        params["character_id"] = character_id
    if since is not None:
        params["since"] = since
    rows, dice_rows = fetch_together(session.connection(), [(figures, params), (dice, params)])
    per: dict[str | None, _Sums] = {}
    for row in rows:
        per.setdefault(row[0] or None, _Sums()).add_row(row[1:])
    for cid, die, count, total in dice_rows:
        per.setdefault(cid or None, _Sums()).add_dice(die, count, total)
    whole = _Sums()
    for sums in per.values():
        whole.merge(sums)
    return {
        "campaign_id": campaign_id,
        "character_id": character_id,
        "since": since.isoformat() if since is not None else None,
        "campaign": whole.out(),
        "characters": [
            {"character_id": cid, **sums.out()} for cid, sums in sorted(per.items(), key=lambda kv: kv[0] or "")
        ],
    }
