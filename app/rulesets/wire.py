"""The results on the wire, one module per ruleset (`app/rulesets/<id>/results.py`, `RESULTS`:
capability -> result models) plus `app.models.results.common`; here, the unions the routes answer with, each a named,
discriminated schema in openapi.json:

- per capability, the rulesets' results told apart by `ruleset` (`TestResult`,
  `OddsResult`, …); the character actions by `ruleset`, then by `type`;
- `CombatEntry`, an encounter action (the routes' answer and its roll-log entry), by `ruleset`;
- `LogEntry`, every roll-log entry, told apart by `kind`.

A ruleset that gains a capability lists its result model in its own module's
`RESULTS`: the unions and the document follow."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.kit.models import union
from app.models.encounters import EncounterPublic
from app.models.results.common import Die, OddsValue, Result, RollResult, SheetEditEntry
from app.rulesets.registry import RESULTS


def _prefix(ruleset: str) -> str:
    return "".join(part.capitalize() for part in ruleset.split("-"))


def by_ruleset(name: str, capability: str) -> Any:
    """The capability's results, by `ruleset`; a ruleset with several (an AS-H2 reroll: a test,
    an opposition or a cooperation), those by `kind`."""
    models = [
        union(f"{_prefix(ruleset)}{name}", r[capability], "kind") for ruleset, r in RESULTS.items() if capability in r
    ]
    return union(name, models, "ruleset")


TestResult = by_ruleset("TestResult", "test")
OddsResult = by_ruleset("OddsResult", "odds")
RerollResult = by_ruleset("RerollResult", "reroll")
LevelUpResult = by_ruleset("LevelUpResult", "level_up")
OpposedResult = by_ruleset("OpposedResult", "opposed")
GroupResult = by_ruleset("GroupResult", "group")
ActionResult = union(
    "ActionResult",
    [union(f"{_prefix(ruleset)}ActionResult", r["action"], "type") for ruleset, r in RESULTS.items() if "action" in r],
    "ruleset",
)

CombatEntry = by_ruleset("CombatEntry", "combat")

LogEntry = union(
    "LogEntry",
    [
        TestResult,
        LevelUpResult,
        OpposedResult,
        GroupResult,
        ActionResult,
        CombatEntry,
        RollResult,
        SheetEditEntry,
    ],
    "kind",
)

# the kinds of roll-log entry (`LogEntry`'s discriminator), the log's `?kind=` filter
LogKind = Literal["test", "level_up", "opposed", "group", "action", "combat", "roll", "sheet_edit"]


class LogPage(Result):
    """A page of the roll log, newest first."""

    items: list[LogEntry]  # type: ignore[valid-type]  # a union built at import from RESULTS
    next_cursor: str | None


class CombatPage(Result):
    """A page of an encounter's actions, newest first."""

    items: list[CombatEntry]  # type: ignore[valid-type]  # a union built at import from RESULTS
    next_cursor: str | None


class LevelUpPage(Result):
    """A page of a character's level-ups, newest first."""

    items: list[LevelUpResult]  # type: ignore[valid-type]  # a union built at import from RESULTS
    next_cursor: str | None


class StartedPublic(EncounterPublic):
    action: CombatEntry = Field(description="The `start` action: every initiative die, with its purpose and owner.")  # type: ignore[valid-type]  # a union built at import from RESULTS


__all__ = [
    "StartedPublic",
    "RESULTS",
    "TestResult",
    "OddsResult",
    "RerollResult",
    "LevelUpResult",
    "OpposedResult",
    "GroupResult",
    "ActionResult",
    "CombatEntry",
    "CombatPage",
    "LogEntry",
    "LogKind",
    "LogPage",
    "LevelUpPage",
    "RollResult",
    "SheetEditEntry",
    "Die",
    "OddsValue",
    "union",
]
