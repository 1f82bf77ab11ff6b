"""Great Cosmos level-ups (GC-L1..L7). Pure: every choice is checked before any
die is rolled; the result lists every die and every before/after value.

Table dice order: the level's own dice, then the `chance` test (d100, then its
karma d10 if any), then the 2d20 bonus if that test succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from app.rules.dice import DiceSource
from app.rules.errors import RuleError
from app.rulesets.great_cosmos.rules.core import STATS, TestResult, canonical_stat, resolve_test

LEVEL2_CAP = 80
LEVEL3_CAP = 85
LEVEL5_CAP = 85
LEVEL5_MAX_TRANSFER = 10
LEVEL5_POINTS = 3
POOLS = ("hp", "mp")
# GC-L5: what the GM's explicit deltas may touch, with their bounds.
CHANGE_BOUNDS = {
    **dict.fromkeys(STATS, (1, 100)),
    "hp_max": (1, 10**6),
    "mp_max": (0, 10**6),
    "light_points": (0, 1000),
    "dark_points": (0, 1000),
    "intuition": (1, 6),
}
POINTS_MAX = 1000  # GC-S6: the sheet's bound on light/dark points
# Which request field belongs to which new level ("6" = 6 and above); GC-S6: the GM's
# light/dark grants (`light`, `dark`) apply to every level-up.
_GRANTS = ("light", "dark")
_FIELDS_BY_LEVEL = {
    2: ("mode", "stats", *_GRANTS),
    3: ("stat", *_GRANTS),
    4: ("pool", *_GRANTS),
    5: ("transfers", *_GRANTS),
    6: ("changes", *_GRANTS),
}


def level_range(name: str) -> tuple[int, int | None] | None:
    """GC-L1..L5: the new levels at which a level-up field applies, as (lowest, highest), highest None
    when it applies from the lowest on; None for a field of every level-up (GC-S6 grants, GC-L6)."""
    levels = [level for level, names in _FIELDS_BY_LEVEL.items() if name in names]
    if not levels or len(levels) == len(_FIELDS_BY_LEVEL):
        return None
    return min(levels), None if max(levels) == max(_FIELDS_BY_LEVEL) else max(levels)


@dataclass(frozen=True)
class Progress:
    """What a level-up reads and changes on a sheet."""

    level: int
    stats: Mapping[str, int]
    hp: int
    hp_max: int
    mp: int
    mp_max: int
    light_points: int
    dark_points: int
    intuition: int
    karma: int
    posture: str | None = None

    def with_stat(self, stat: str, value: int) -> Progress:
        return replace(self, stats=MappingProxyType({**self.stats, stat: value}))

    def get(self, key: str) -> int:
        return self.stats[key] if key in self.stats else getattr(self, key)


@dataclass(frozen=True)
class Choices:
    """The player's / GM's choices (None = not given)."""

    chance_bonus_pool: str
    mode: str | None = None
    stats: tuple[str, ...] | None = None
    stat: str | None = None
    pool: str | None = None
    transfers: tuple[tuple[str, str, int], ...] | None = None
    light: int | None = None
    dark: int | None = None
    changes: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class Change:
    """One value a level-up changed, with the dice behind it."""

    field: str
    before: int | bool
    after: int | bool
    dice: tuple[int, ...] = ()


@dataclass(frozen=True)
class LevelUp:
    """GC-L7: the whole record of one level-up."""

    rule: str
    before: Progress
    after: Progress
    changes: tuple[Change, ...]
    chance: TestResult
    bonus_pool: str
    bonus_dice: tuple[int, ...] = field(default=())


def _refuse(field_name: str, detail: str) -> RuleError:
    return RuleError(detail, field=field_name, code="level_up_choice")


def check_choices(new_level: int, choices: Choices, progress: Progress) -> Choices:
    """GC-L7: refuse (422 naming the field) choices that are missing, illegal or
    meant for another level; returns them with stat aliases resolved."""
    if choices.chance_bonus_pool not in POOLS:
        raise _refuse("chance_bonus_pool", "chance_bonus_pool is hp or mp (GC-L6)")
    allowed = _FIELDS_BY_LEVEL[min(new_level, 6)]
    for name in ("mode", "stats", "stat", "pool", "transfers", "light", "dark", "changes"):
        if getattr(choices, name) is not None and name not in allowed:
            raise _refuse(name, f"{name} does not apply to a level-up to level {new_level}")
    _check_grants(choices, progress)
    check = {2: _check_level2, 3: _check_level3, 4: _check_level4, 5: _check_level5}.get(new_level, _check_level6)
    return check(choices, progress)


def _check_grants(c: Choices, p: Progress) -> None:
    """GC-S6: the GM grants light/dark points at any level-up (« accordés par le MJ au cours
    d'un changement de niveau »): each grant >= 0, the points staying within the sheet's bound."""
    for name, have in (("light", p.light_points), ("dark", p.dark_points)):
        grant = getattr(c, name)
        if grant is not None and grant < 0:
            raise _refuse(name, f"{name} is a grant of 0 or more points, not {grant} (GC-S6)")
        if grant is not None and have + grant > POINTS_MAX:
            raise _refuse(name, f"{name}_points would reach {have + grant}; at most {POINTS_MAX} (GC-S6)")


def _check_level2(c: Choices, p: Progress) -> Choices:
    """GC-L1: two different stats (two_d10) or one (one_d20)."""
    if c.mode not in ("two_d10", "one_d20"):
        raise _refuse("mode", "level 2 needs mode two_d10 or one_d20 (GC-L1)")
    wanted = 2 if c.mode == "two_d10" else 1
    stats = tuple(canonical_stat(s, field="stats") for s in (c.stats or ()))
    if len(stats) != wanted or len(set(stats)) != wanted:
        kind = "two different stats" if wanted == 2 else "exactly one stat"
        raise _refuse("stats", f"mode {c.mode} needs {kind} (GC-L1)")
    return replace(c, stats=stats)


def lowest_stats(stats: Mapping[str, int]) -> tuple[str, ...]:
    """GC-L2: the stats tied for the lowest value, in sheet order."""
    low = min(stats[s] for s in STATS)
    return tuple(s for s in STATS if stats[s] == low)


def _check_level3(c: Choices, p: Progress) -> Choices:
    """GC-L2: `stat`, if given, must be one of the lowest (default the first)."""
    tied = lowest_stats(p.stats)
    if c.stat is None:
        return replace(c, stat=tied[0])
    stat = canonical_stat(c.stat)
    if stat not in tied:
        raise _refuse("stat", f"{stat} is not among the lowest stats ({', '.join(tied)}) (GC-L2)")
    return replace(c, stat=stat)


def _check_level4(c: Choices, p: Progress) -> Choices:
    """GC-L3: `pool` hp or mp."""
    if c.pool not in POOLS:
        raise _refuse("pool", "level 4 needs pool hp or mp (GC-L3)")
    return c


def _check_level5(c: Choices, p: Progress) -> Choices:
    """GC-L4: the GM splits +3 between light and dark (GC-S6: any further grant on top, so
    light + dark >= 3); transfers of at most 10 points, none above 85 nor below 1."""
    if c.light is None or c.dark is None:
        raise _refuse("light" if c.light is None else "dark", "level 5 needs light and dark (GC-L4)")
    if c.light + c.dark < LEVEL5_POINTS:
        raise _refuse(
            "light",
            f"light + dark must be at least {LEVEL5_POINTS} (the +3 of level 5, "
            f"plus any grant), not {c.light} + {c.dark} (GC-L4, GC-S6)",
        )
    transfers = []
    for i, (src, dst, points) in enumerate(c.transfers or ()):
        src, dst = canonical_stat(src, field=f"transfers.{i}.from"), canonical_stat(dst, field=f"transfers.{i}.to")
        if src == dst:
            raise _refuse(f"transfers.{i}.to", "a transfer moves points between two different stats (GC-L4)")
        if points < 1:
            raise _refuse(f"transfers.{i}.points", "a transfer moves at least 1 point (GC-L4)")
        transfers.append((src, dst, points))
    total = sum(t[2] for t in transfers)
    if total > LEVEL5_MAX_TRANSFER:
        raise _refuse("transfers", f"{total} points moved; at most {LEVEL5_MAX_TRANSFER} (GC-L4)")
    after = dict(p.stats)
    for src, dst, points in transfers:
        after[src] -= points
        after[dst] += points
    for s in STATS:
        if after[s] < 1:
            raise _refuse("transfers", f"{s} would fall to {after[s]}; no stat below 1 (GC-L4)")
        if after[s] > p.stats[s] and after[s] > LEVEL5_CAP:
            raise _refuse("transfers", f"{s} would reach {after[s]}; no stat above {LEVEL5_CAP} (GC-L4)")
    return replace(c, transfers=tuple(transfers))


def _check_level6(c: Choices, p: Progress) -> Choices:
    """GC-L5: the GM's explicit deltas, each result within its bounds."""
    merged: dict[str, int] = {}
    for key, delta in c.changes or ():
        name = canonical_stat(key, field=f"changes.{key}") if key in STATS or key == "furtivite" else key
        if name not in CHANGE_BOUNDS:
            raise _refuse(f"changes.{key}", f"{key} cannot be changed; one of {', '.join(CHANGE_BOUNDS)} (GC-L5)")
        merged[name] = merged.get(name, 0) + delta
    grants = {"light_points": c.light or 0, "dark_points": c.dark or 0}  # GC-S6, applied too
    for name, delta in merged.items():
        low, high = CHANGE_BOUNDS[name]
        value = p.get(name) + delta + grants.get(name, 0)
        if not low <= value <= high:
            raise _refuse(f"changes.{name}", f"{name} would be {value}; allowed {low}..{high} (GC-L5)")
    return replace(c, changes=tuple(merged.items()))


def _raise_stat(p: Progress, stat: str, die: int, cap: int) -> tuple[Progress, Change]:
    """GC-L1/GC-L2: +die up to the cap; a stat already above it does not go down."""
    old = p.stats[stat]
    new = max(old, min(cap, old + die))
    return p.with_stat(stat, new), Change(f"stats.{stat}", old, new, (die,))


def _add_pool(p: Progress, pool: str, amount: int, dice: tuple[int, ...]) -> tuple[Progress, list[Change]]:
    """GC-L3/GC-L6: pool max +amount, and the current value by the same amount."""
    cur_old, max_old = getattr(p, pool), getattr(p, f"{pool}_max")
    p = replace(p, **{pool: cur_old + amount, f"{pool}_max": max_old + amount})
    return p, [Change(f"{pool}_max", max_old, max_old + amount, dice), Change(pool, cur_old, cur_old + amount, dice)]


def apply_level_dice(new_level: int, c: Choices, p: Progress, dice: DiceSource) -> tuple[Progress, list[Change], str]:
    """GC-L1..L5: the level's own changes (its dice first)."""
    changes: list[Change] = []
    if new_level == 2:
        faces = 10 if c.mode == "two_d10" else 20
        assert c.stats is not None  # each level's choices are checked first (check_choices)
        for stat in c.stats:
            p, ch = _raise_stat(p, stat, dice.roll(faces, f"level_up:{stat}"), LEVEL2_CAP)
            changes.append(ch)
        return p, changes, "GC-L1"
    if new_level == 3:
        assert c.stat is not None
        p, ch = _raise_stat(p, c.stat, dice.roll(10, f"level_up:{c.stat}"), LEVEL3_CAP)
        return p, [ch], "GC-L2"
    if new_level == 4:
        assert c.pool is not None
        die = dice.roll(100, f"level_up:{c.pool}_max")
        p, chs = _add_pool(p, c.pool, die, (die,))
        return p, chs, "GC-L3"
    if new_level == 5:
        return (*_apply_level5(c, p), "GC-L4")
    return (*_apply_level6(c, p), "GC-L5")


def apply_grants(c: Choices, p: Progress) -> tuple[Progress, list[Change]]:
    """GC-S6: the GM's light/dark grants of a level-up other than 5 (level 5 adds them with
    its +3, GC-L4); a grant of 0 or none changes nothing."""
    changes = []
    for name in _GRANTS:
        grant = getattr(c, name) or 0
        if grant:
            old = getattr(p, f"{name}_points")
            p = replace(p, **{f"{name}_points": old + grant})
            changes.append(Change(f"{name}_points", old, old + grant))
    return p, changes


def _apply_level5(c: Choices, p: Progress) -> tuple[Progress, list[Change]]:
    """GC-L4: transfers, +light/+dark, Final Skill unlocked."""
    before = dict(p.stats)
    for src, dst, points in c.transfers or ():
        p = p.with_stat(src, p.stats[src] - points).with_stat(dst, p.stats[dst] + points)
    changes = [Change(f"stats.{s}", before[s], p.stats[s]) for s in STATS if before[s] != p.stats[s]]
    assert c.light is not None and c.dark is not None  # level 5 requires both (check_choices)
    changes += [
        Change("light_points", p.light_points, p.light_points + c.light),
        Change("dark_points", p.dark_points, p.dark_points + c.dark),
        Change("final_skill_unlocked", False, True),
    ]
    p = replace(p, light_points=p.light_points + c.light, dark_points=p.dark_points + c.dark)
    return p, changes


def _apply_level6(c: Choices, p: Progress) -> tuple[Progress, list[Change]]:
    """GC-L5: explicit deltas; a max pool change moves its current value too (kept within 0..max)."""
    changes = []
    for name, delta in c.changes or ():
        old = p.get(name)
        if name in STATS:
            p = p.with_stat(name, old + delta)
            changes.append(Change(f"stats.{name}", old, old + delta))
            continue
        value: dict[str, Any] = {name: old + delta}  # a pool or its max, by name
        p = replace(p, **value)
        changes.append(Change(name, old, old + delta))
        if name in ("hp_max", "mp_max"):
            pool = name[:2]
            cur = getattr(p, pool)
            new = max(0, min(old + delta, cur + delta))
            p = replace(p, **{pool: new})
            changes.append(Change(pool, cur, new))
    return p, changes


def level_up(
    progress: Progress, choices: Choices, dice: DiceSource, *, extreme_scores: bool = False, test_bonus: int = 0
) -> LevelUp:
    """GC-L1..L7: raise the level by one: check every choice, roll the level's dice, add
    the GM's light/dark grants (GC-S6), then the chance test (GC-L6: full test rules,
    karma included; `test_bonus`: an Illumination advantage's +10/+20, GC-P5) and its 2d20 bonus."""
    new_level = progress.level + 1
    c = check_choices(new_level, choices, progress)
    p, changes, rule = apply_level_dice(new_level, c, progress, dice)
    if new_level != 5:
        p, grants = apply_grants(c, p)
        changes += grants
    chance = resolve_test(
        dice, p.stats["chance"] + test_bonus, p.karma, posture=p.posture, extreme_scores=extreme_scores
    )
    if chance.karma_after != p.karma:
        changes.append(Change("karma", p.karma, chance.karma_after))
        p = replace(p, karma=chance.karma_after)
    bonus: tuple[int, ...] = ()
    if chance.success:
        bonus = tuple(dice.roll_many(2, 20, f"chance_bonus:{c.chance_bonus_pool}_max"))
        p, chs = _add_pool(p, c.chance_bonus_pool, sum(bonus), bonus)
        changes += chs
    changes.insert(0, Change("level", progress.level, new_level))
    p = replace(p, level=new_level)
    return LevelUp(
        rule=rule,
        before=progress,
        after=p,
        changes=tuple(changes),
        chance=chance,
        bonus_pool=c.chance_bonus_pool,
        bonus_dice=bonus,
    )
