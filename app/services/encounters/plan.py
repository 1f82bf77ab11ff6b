"""The dice an action will consume and its exact odds (`POST /v1/encounters/{eid}/actions/plan`).

The plan cannot drift from the action: it is the action route's own use case
(`actions.dispatch`) in the encounter's unit of work, rolled back (nothing written, no event,
no log entry), with the caller's own checks in the route's order (a refusal is the problem the
action would answer). Every check passed, the prepared action (`actions.Prepared`) is not
resolved but handed here: its exchange is built afresh for each resolution made in memory.

The body is the action's, `seed` and table `dice` included: the dice they give (those the caller
enters, as the action takes them) are taken first, in order, so a plan given every die is exactly
the dice the action then consumes, and a plan given the first ones plans the rest.

Dice: the exchange is resolved under several fixed choices of values for the dice the body does
not give (the actor's dice low and the others' high, the reverse, all low, all high), each die
recorded as the action records it (its die, purpose and whose it is); the longest sequence is the
plan, and a die missing from another resolution is listed with its `condition`. `entered_by`:
`caller` when the caller may enter that die (the GM: every die; a player: its own combatants'
when the campaign lets players enter dice), else `server`. A player who may not read a party's
whole sheet is told dice that do not depend on that party's pools: they are walked on stand-ins
(`_builds`), never on the real values.

Odds: the ruleset's exact distribution of the exchange (`EncounterRules.odds`, built from the
pure rules the action applies); for an action without one, brute force over every combination
of its dice (the exchange resolved on each, each die uniform) when they are at most
`MAX_RESOLUTIONS`. `hit`: the target's first pool lowered; `down`: that pool brought to 0 by this
action, in every ruleset; `out` (a ruleset where 0 does not yet take a combatant out, AS-C5): the
target put out by this action (as the action's `turn` step says).

Odds never depend on what the caller may not read: a player gets a figure only when every figure
it is computed from is one that player reads (`_withheld`); the others are null and named in
`withheld`. The encounter's `odds_for_players` lets the GM share all of them, or none."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

from sqlmodel import Session

from app.kit.errors import AppError
from app.kit.models import RollingRequest
from app.models.validation import InvalidBody
from app.rules.dice import DiceSource, TableDice
from app.rules.distribution import TooManyCombinations
from app.rules.errors import DiceLeftOver, DiceNeeded, TooManyDice
from app.rulesets.contract.combat import EncounterRules, Exchange, ExchangeOdds
from app.services.encounters import actions, store
from app.services.encounters.choices import trial
from app.services.encounters.dice import CombatDice
from app.services.encounters.store import Fight
from app.services.encounters.unit import EncounterWork
from app.services.records import Principal
from app.services.visibility import NOT_FIGHTING, level_for, standings

MAX_DICE = 200
MAX_RESOLUTIONS = 1000  # without the ruleset's exact odds, resolutions counted one by one up to this many
CONDITION = "needed only on some results of the dice before it (not in every resolution of the action)"
PLANNED = "_planned"  # marks a combat action's plan (a GM action is run, rolled back, instead)
Strategy = Callable[[int, str | None, str], int]


def _faces(die: str) -> int:
    digits = die.lstrip("dD")
    return int(digits) if digits.isdigit() else 1


def _low(faces: int, by: str | None, actor: str) -> int:
    return 1


def _high(faces: int, by: str | None, actor: str) -> int:
    return faces


def _actor_low(faces: int, by: str | None, actor: str) -> int:
    return 1 if by in (actor, None) else faces


def _actor_high(faces: int, by: str | None, actor: str) -> int:
    return faces if by in (actor, None) else 1


STRATEGIES: tuple[Strategy, ...] = (_actor_low, _actor_high, _low, _high)


class _Chosen(DiceSource):
    """Each die from the body's dice when they give it (`given`: the caller's seed or table dice,
    for the dice the caller enters, until they run out), else the strategy's value for whose it is
    (the action's routing names it)."""

    def __init__(self, dice: CombatDice, strategy: Strategy, actor: str, given: CombatDice | None):
        super().__init__()
        self.routed, self.strategy, self.actor = dice.source, strategy, actor
        self.given = given.source if given is not None else None

    def _next(self, faces: int, purpose: str) -> int:
        who = self.routed.who or purpose.partition(":")[2] or None
        given = self.given
        if given is not None and (given.controls is None or given.controls(who)) and not _spent(given.caller):
            return given.caller._next(faces, purpose)  # a table die out of range: the action's 422
        return self.strategy(faces, who, self.actor)


def _spent(source: DiceSource) -> bool:
    return isinstance(source, TableDice) and source.used >= len(source.values)


def chosen_dice(strategy: Strategy, actor: str, given: CombatDice | None = None) -> CombatDice:
    dice = CombatDice(dice=[])
    dice.source.caller = _Chosen(dice, strategy, actor, given)
    return dice


def _given(principal: Principal, prepared: actions.Prepared) -> CombatDice | None:
    """The body's own dice, afresh for one resolution (None: it gives none, the server rolls)."""
    rolling = prepared.rolling
    if rolling.seed is None and rolling.dice is None:
        return None
    return CombatDice.for_caller(principal, rolling, prepared.fight, None)  # a plan rolls no server die


def plan(session: Session, principal: Principal, encounter_id: str, body: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidBody("the body is an action (a JSON object)")
    uow = EncounterWork(session, principal, encounter_id, None, combatants=actions.named(body))
    try:
        with uow:  # never committed: the unit of work rolls everything back on exit
            out = actions.dispatch(uow, uow.fight, principal, body, planner=partial(_planned, principal, uow))
            fight = uow.fight
    except DiceNeeded:  # a GM action whose table dice run out (it rolls them itself): planned on below
        if not isinstance(body.get("dice"), list):
            raise
        fight = uow.fight
    else:
        if out.pop(PLANNED, False):
            return out
    return _gm_plan(session, principal, encounter_id, body, fight)  # a GM action (checked: it ran)


def _planned(principal: Principal, uow: EncounterWork, prepared: actions.Prepared) -> dict[str, Any]:
    """The plan of a combat action every check passed: its dice, then its odds (those the caller
    may not read withheld)."""
    fight, x = prepared.fight, prepared.exchange
    may_enter = _enterer(fight, principal)
    unread = _unread(uow, principal, prepared)
    walks, failed, left_over = [], [], []
    for build in _builds(prepared, unread):
        for strategy in STRATEGIES:
            given = _given(principal, prepared)
            try:
                walks.append(_resolved(build, fight.rules, chosen_dice(strategy, x.actor.id, given)).rolls())
            except AppError as exc:  # values no table rolls (RB-C2's tie rerolled equal forever): not a plan
                failed.append(exc)
                continue
            if given is not None:
                try:
                    given.finish()
                except DiceLeftOver as exc:
                    left_over.append(exc)
    if not walks:  # the body's own dice refused (a table die out of range), however it goes
        raise failed[0]
    if len(left_over) == len(walks):  # more table dice than the action takes, however it goes
        raise left_over[0]
    out: dict[str, Any] = {PLANNED: True, "dice": _listed(walks, may_enter, vague=bool(unread))}
    if prepared.target_id is not None and out["dice"]:
        withheld = _withheld(fight, principal, unread)
        if withheld == ALL_WITHHELD:  # not even counted: nothing in the answer depends on them
            out["odds"] = {**dict.fromkeys(_figures(fight.rules)), "withheld": list(_figures(fight.rules))}
            return out
        try:
            exact = fight.rules.odds(prepared.build(CombatDice(dice=[])))
        except TooManyCombinations:  # a damage expression too large to count exactly (`100d1000`)
            exact = None
        odds = exact or brute_force(prepared)
        if odds is not None:
            out["odds"] = odds_body(odds, withheld)
    return out


def _resolved(build: Callable[[CombatDice], Exchange], rules: EncounterRules, dice: CombatDice) -> CombatDice:
    x = build(dice)
    with dice.explained():
        rules.resolve(x)
    return dice


STAND_INS = (1, 10_000)  # a pool any blow empties, one no blow does


def _builds(prepared: actions.Prepared, unread: frozenset[str]) -> list[Callable[[CombatDice], Exchange]]:
    """The exchanges the dice are walked on. When the caller may not read some party's sheet
    whole, the dice it is told must not depend on that party's pools (which dice a blow taking
    a pool to 0 asks, AS-C5's tests): its pools are replaced by stand-ins, one any blow empties
    and one none does, and the real sheet is not walked, so a die some pool value asks is listed,
    with its `condition`, whatever the real value."""
    if not unread:
        return [prepared.build]
    pools = prepared.fight.rules.pools

    def standing_in(value: int, dice: CombatDice) -> Exchange:
        x = prepared.build(dice)
        for party in (x.actor, x.target, *x.more):
            if party is not None and party.id in unread:
                for pool in pools:
                    pool.set(party.sheet, value)
                    if pool.max_key is not None:
                        setattr(party.sheet, pool.max_key, max(STAND_INS))
        return x

    return [partial(standing_in, value) for value in STAND_INS]


def _key(roll: dict[str, Any]) -> tuple[str, str, str | None]:
    return (roll["die"], roll["purpose"], roll["by"])


def _listed(
    walks: list[list[dict[str, Any]]], may_enter: Callable[[str | None], str], *, vague: bool = False
) -> list[dict[str, Any]]:
    """The longest resolution's dice, in order; a die another resolution did not take carries its
    `condition`, naming the dice it depends on (`depends_on`, numbered from 1): for each such
    resolution, the last die it took in common with the longest before taking other dice or none
    (its result decided that this one is not needed: a damage die only when the attack die hits).
    `vague`: the caller may not read every party's sheet, and which earlier die decides depends on
    that sheet (AS-C5's resistance test against the target's own figures): none is named."""
    base = max(walks, key=len)
    if len(base) > MAX_DICE:
        raise TooManyDice(len(base), MAX_DICE, field="dice")  # a safety stop: no action takes this many
    dice, seen = [], Counter[tuple[str, str, str | None]]()
    for i, roll in enumerate(base):
        key = _key(roll)
        seen[key] += 1
        entry = {"die": roll["die"], "purpose": roll["purpose"], "by": roll["by"], "entered_by": may_enter(roll["by"])}
        lacking = [w for w in walks if sum(1 for r in w if _key(r) == key) < seen[key]]
        if lacking:
            on = [] if vague else sorted({_common(base[:i], w) for w in lacking} - {0})
            entry["depends_on"] = on
            entry["condition"] = (
                "needed only on some results of "
                + " and ".join(f"die {j} ({base[j - 1]['die']} {base[j - 1]['purpose']})" for j in on)
                if on
                else CONDITION
            )
        dice.append(entry)
    return dice


def _common(before: list[dict[str, Any]], walk: list[dict[str, Any]]) -> int:
    """How many dice `walk` took in common with `before`, from the first (by die, purpose, whose)."""
    n = 0
    for a, b in zip(before, walk):
        if _key(a) != _key(b):
            break
        n += 1
    return n


# --- what a player may read of the odds -----------------------------------------------------------

ODDS_FIGURES = ("outcomes", "hit", "down", "out")
ALL_WITHHELD = frozenset(ODDS_FIGURES)


def _figures(rules: EncounterRules) -> tuple[str, ...]:
    """The figures of a plan's odds in this ruleset (`out` where 0 does not yet take one out)."""
    return ODDS_FIGURES if not rules.out_at_zero else ODDS_FIGURES[:3]


def _withheld(fight: Fight, principal: Principal, unread: frozenset[str]) -> frozenset[str]:
    """The odds figures the caller may not be given. The GM: none. A player, as the encounter's
    `odds_for_players` says: `all` none, `none` every one; `visible`: every figure is computed from
    the sheets of the exchange's parties (the target's defence, protection, karma, armour; a
    cooperating member's test) and `down`/`out` from the target's pools too, so all are given when
    the player reads each party's whole sheet (`_unread` names none), and none otherwise."""
    if principal.is_gm:
        return frozenset()
    shared = fight.options.odds_for_players
    if shared != "visible":
        return frozenset() if shared == "all" else ALL_WITHHELD
    return ALL_WITHHELD if unread else frozenset()


def _unread(uow: EncounterWork, principal: Principal, prepared: actions.Prepared) -> frozenset[str]:
    """The parties (combatant ids) whose whole sheet the caller may not read: none for the GM; for
    a player, each whose character `player_access` and the `hp_visibility` of its fights keep
    anything from it (`visibility.level_for` is `observer` only when neither does, a fight showing
    pools as a status or not at all never allowing it)."""
    if principal.is_gm:
        return frozenset()
    fight, x = prepared.fight, prepared.exchange
    parties = [p for p in (x.actor, x.target, *x.more) if p is not None]
    found = standings(uow.conn, fight.campaign_id, {p.character_id for p in parties})
    unread = set()
    for party in parties:
        character = fight.characters.get(party.character_id)
        standing = found.get(party.character_id, NOT_FIGHTING)
        if character is None or level_for(principal, character, standing) != "observer":
            unread.add(party.id)
    return frozenset(unread)


def share(p: Fraction) -> dict[str, Any]:
    return {"probability": f"{p.numerator}/{p.denominator}", "p": float(p)}


def odds_body(odds: ExchangeOdds, withheld: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The odds as the plan answers them: each figure withheld null, and named in `withheld`."""
    figures: dict[str, Any] = {
        "outcomes": {name: share(p) for name, p in odds.outcomes.items()},
        "hit": share(odds.hit),
        "down": share(odds.down),
    }
    if odds.out is not None:
        figures["out"] = share(odds.out)
    hidden = [name for name in figures if name in withheld]
    return {**figures, **dict.fromkeys(hidden), "withheld": hidden}


# --- brute force: every combination of the action's dice -----------------------------------------


class _TooMany(Exception):
    """The action's dice have more combinations than an exact count walks here."""


def outcome(prepared: actions.Prepared, x: Exchange) -> tuple[bool, bool, bool]:
    """(hit, down, out) of one resolved exchange, as the action records them: the target's first
    pool lowered, brought to 0 (from above), the target out (`is_down`) now and not before."""
    rules, target = prepared.fight.rules, prepared.target_id
    party = next(p for p in (x.target, *x.more) if p is not None and p.id == target)
    pool = rules.pools[0]
    before = pool.value(prepared.exchange.target.sheet) if prepared.exchange.target is not None else 0
    after = pool.value(party.sheet)
    out = rules.is_down(party.sheet) and not prepared.was_down[party.id]
    return after < before, before > 0 >= after, out


def brute_force(prepared: actions.Prepared, limit: int = MAX_RESOLUTIONS) -> ExchangeOdds | None:
    """The exact odds by brute force: the exchange resolved on every combination of its dice (each
    die uniform, a die asked only where the earlier ones need it). None beyond `limit` resolutions.
    Its outcomes: `hit` and `missed` (the ruleset's exact odds name the exchange's own)."""
    hit, down, out = Fraction(0), Fraction(0), Fraction(0)
    resolutions = 0
    rules = prepared.fight.rules

    def explore(prefix: list[int], p: Fraction) -> None:
        nonlocal hit, down, out, resolutions
        resolutions += 1
        if resolutions > limit:
            raise _TooMany
        dice = CombatDice(dice=prefix)
        x = prepared.build(dice)
        try:
            rules.resolve(x)
        except DiceNeeded as needed:
            faces = _faces(needed.extra["needed"]["die"])
            if resolutions + faces > limit:
                raise _TooMany from None
            for value in range(1, faces + 1):
                explore([*prefix, value], p / faces)
            return
        h, d, o = outcome(prepared, x)
        hit += p if h else 0
        down += p if d else 0
        out += p if o else 0

    try:
        explore([], Fraction(1))
    except _TooMany:
        return None
    return ExchangeOdds(
        outcomes={"hit": hit, "missed": 1 - hit}, hit=hit, down=down, out=None if rules.out_at_zero else out
    )


# --- a GM action with dice (AS-C5 after `damage`): the route walked with table dice ---------------


def _gm_plan(
    session: Session, principal: Principal, encounter_id: str, body: dict[str, Any], fight: Fight
) -> dict[str, Any]:
    """A GM action (it passed the route's checks): its dice walked with table dice, one trial per
    die (the dice come from its own handler, not a ruleset's exchange)."""
    if not isinstance(fight.rules.parse_action(body), RollingRequest):  # takes no dice (the GM's heal…)
        return {"dice": []}
    actor = body.get("actor_id") if isinstance(body.get("actor_id"), str) else ""
    walks, failed = [], []
    for strategy in STRATEGIES:
        try:
            walks.append(_walk(session, principal, encounter_id, body, strategy, str(actor)))
        except AppError as exc:  # values no table rolls (as above), or the body's own dice refused
            failed.append(exc)
    if not walks:
        raise failed[0]
    return {"dice": _listed(walks, _enterer(fight, principal))}


def _walk(
    session: Session, principal: Principal, encounter_id: str, body: dict[str, Any], strategy: Strategy, actor: str
) -> list[dict[str, Any]]:
    """The action tried with the body's table dice, then one more die at a time (a `seed` gives them all)."""
    seeded = body.get("seed") is not None
    dice: list[int] = [] if seeded else list(body.get("dice") or [])
    while len(dice) <= MAX_DICE:
        done, refused = trial(session, principal, encounter_id, body if seeded else {**body, "dice": dice})
        if refused is None:
            assert done is not None
            return [{"die": r["die"], "purpose": r["purpose"], "by": r.get("by")} for r in done["rolls"]]
        if refused.code != "dice_needed" or seeded:
            raise refused
        needed = refused.extra["needed"]
        dice.append(strategy(_faces(needed["die"]), needed.get("by"), actor))
    raise TooManyDice(len(dice), MAX_DICE, field="dice")


def _enterer(fight: Fight, principal: Principal) -> Callable[[str | None], str]:
    """Who enters a die of this combatant: the GM every die; a player its own combatants' when the
    campaign's `players_may_enter_dice`, the server every other (API.md, dice provenance)."""
    if principal.is_gm:
        return lambda _by: "caller"
    if not fight.ruleset_options.players_may_enter_dice:
        return lambda _by: "server"
    store.load_characters(fight, (c["character_id"] for c in fight.combatants), lock=False)

    def who(by: str | None) -> str:
        found = fight.some([by]) if by is not None else []
        ch = fight.character_of(found[0]) if found else None
        return "caller" if ch is not None and ch.player_id == principal.player_id else "server"

    return who
