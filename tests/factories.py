"""The test data, in one place: one valid sheet per ruleset, the variations tests build
from it (`sheet`, `stats`, the combatants), and a valid test request per ruleset; the
campaign, player and character builders are tests/conftest.py's factories. A module says what its data changes (`sheet(AS, heroism=9)`), so what
every test shares is written once and a change to a sheet model is fixed here once."""

from __future__ import annotations

import copy
from typing import Any, Iterable

GC, AS, RB, WA = "great-cosmos", "asgard", "rulebook-d100", "worlds-awakening"
RULESETS = (GC, AS, RB, WA)

# one valid sheet per ruleset, every common field written out
SHEETS: dict[str, dict[str, Any]] = {
    GC: {
        "race": "humain",
        "level": 1,
        "stats": {"force": 68, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60},
        "intuition": 3,
        "karma": 0,
        "hp": 100,
        "hp_max": 100,
        "mp": 50,
        "mp_max": 50,
        "default_posture": "defensive",
    },
    AS: {
        "skills": {
            "combat": 6,
            "defense": 4,
            "survie": 3,
            "acrobatie": 2,
            "resistance": 3,
            "volonte": 1,
            "soins": 4,
            "athletisme": 2,
        },
        "vitality": 20,
        "vitality_max": 20,
        "heroism": 3,
        "protection": 2,
        "weapons": [{"name": "epee", "damage_dice": 2, "ranged": False}],
        "assets": [{"name": "Fils de Thor", "heroic_effect": "relance la foudre"}],
        "tier": None,
    },
    RB: {
        "stats": {"FOR": 50, "HAB": 60},
        "skills": {"escrime": 20},
        "crit_chance": 5,
        "hp": 14,
        "hp_max": 14,
        "pe": 14,
        "pe_max": 14,
        "armor": 0,
    },
    WA: {
        "level": 1,
        "stats": {"FOR": 2, "DEX": 1, "CON": 0, "INT": 0, "SAG": -1, "CHA": 3},
        "hp": 12,
        "hp_max": 12,
        "mp": 0,
        "mp_max": 0,
        "weapons": [{"name": "epee_longue", "stat": "FOR", "damage": "1d8"}],
    },
}

# a valid test request per ruleset (a seed, so anyone may send it)
TEST_BODIES: dict[str, dict[str, Any]] = {
    GC: {"stat": "force", "seed": 1},
    AS: {"skill": "survie", "difficulty": "moyen", "seed": 1},
    RB: {"stat": "FOR", "seed": 1},
    WA: {"stat": "FOR", "target": 12, "seed": 1},
}

GC_REQUIRED = ("race", "stats", "hp_max", "mp_max")  # what a great-cosmos sheet must give (GC-S1)


def sheet(
    ruleset: str, *, keep: Iterable[str] | None = None, drop: Iterable[str] = (), **changes: Any
) -> dict[str, Any]:
    """A fresh copy of the ruleset's valid sheet: only the `keep` fields (all when None), the
    `drop` ones left out, these fields replaced. A copy, so a test may change it freely."""
    base = copy.deepcopy(SHEETS[ruleset])
    kept = base.keys() if keep is None else set(keep)
    out = {k: v for k, v in base.items() if k in kept and k not in set(drop)}
    return {**out, **copy.deepcopy(changes)}


def stats(ruleset: str, **changes: int) -> dict[str, int]:
    """The valid sheet's stats, these changed (`stats(GC, agilite=40)`)."""
    return {**SHEETS[ruleset]["stats"], **changes}


# the great-cosmos sheet reduced to what it must give: the rest is the model's defaults
# (level 1, karma 0, hp = hp_max…), which tests of those defaults rely on
GC_MINIMAL = sheet(GC, keep=GC_REQUIRED)

# the owner's sheets of the sheet-authority tests: a worlds-awakening challenge in progress (WA-T6)
OWNER_SHEETS = {**SHEETS, WA: sheet(WA, challenges={"crochetage": {"name": "crochetage", "successes_needed": 3}})}


# --- combatants: what decides their initiative as a parameter, the rest of the sheet fixed ---


def gc_fighter(agilite: int = 55, **extra: Any) -> dict[str, Any]:
    """A great-cosmos combatant; its agility decides its initiative (GC-O1)."""
    return {**GC_MINIMAL, **extra, "stats": stats(GC, agilite=agilite)}


def rb_fighter(hab: int = 60, **extra: Any) -> dict[str, Any]:
    """A rulebook-d100 combatant without skills; its HAB decides its initiative (RB-F4)."""
    return {**sheet(RB, drop=("skills", "armor")), "stats": stats(RB, HAB=hab), **extra}


def wa_fighter(dex: int = 1, **extra: Any) -> dict[str, Any]:
    """A worlds-awakening combatant with 4 MP and no weapon; its DEX decides its initiative (WA-C4)."""
    return {**sheet(WA, drop=("weapons",), mp=4, mp_max=4), "stats": stats(WA, DEX=dex, CHA=0), **extra}


def as_fighter(perception: int = 2, **extra: Any) -> dict[str, Any]:
    """An asgard combatant with three skills; its perception decides its initiative (AS-C13)."""
    return {
        **sheet(AS, keep=("vitality", "vitality_max", "heroism", "protection")),
        "skills": {"combat": 6, "defense": 4, "perception": perception},
        **extra,
    }


def old_roll_body(entry_id: str, purpose: str) -> dict[str, Any]:
    """A free roll's log body as an earlier version logged it (before `provenance`, issue 21)."""
    return {
        "id": entry_id,
        "kind": "roll",
        "expression": "1d6",
        "total": 4,
        "purpose": purpose,
        "character_id": None,
        "rolls": [{"die": "d6", "value": 4, "purpose": purpose}],
        "hidden": False,
        "created_at": "2026-11-30T10:00:00.000000Z",
    }
