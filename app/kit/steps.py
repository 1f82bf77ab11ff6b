"""A step of an action's explanation, the keys every ruleset's steps share: one rule applied, its
id, its kind and its words, then its figures. Here, at the bottom, because a ruleset's pure rules
build steps too (AS-C5 a condition's rounds); each ruleset declares its own figures beside them
(`app/rulesets/<id>/rules/steps.py`), the encounter flow its own (`app.models.fight_rows.FlowStep`).

TypedDicts, not classes: a step is the JSON that is logged and stored, so naming its keys changes
nothing at run time; mypy checks each key where a step is built."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["Step", "StepFigures"]


class StepFigures(TypedDict, total=False):
    """The figures other code may rely on (a viewer's filter, the log), whatever the rule."""

    combatant_id: str | None  # whom it is about
    resource: str  # a pool's name: its figures follow `hp_visibility`
    amount: int
    # a pool's value as a rule reads it: a number, or the `{status}` a viewer may see instead
    before: Any
    after: Any
    excess: int
    outcome: str


class Step(StepFigures, total=False):
    """One rule applied: the common keys. A ruleset's steps (`AsgardStep`…) add their figures."""

    rule: str  # the rule's id (`AS-C1`)
    key: str  # the kind of step, snake_case: what a client looks its words up by
    what: str  # its English words
