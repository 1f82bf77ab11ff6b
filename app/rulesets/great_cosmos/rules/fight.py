"""Great Cosmos: what a fight keeps between actions, turn by turn (GC-P1, GC-P2, GC-P6, GC-P7).
Pure rules on the combatant's per-fight counters (plain JSON dicts):

- `special` (GC-P5/P6): the special posture held: `posture`, `since_round`, `turns` (its
  holder's turns spent in it: the entry turn, then one more at the start of each of its
  turns), `turn_round` (the round of the last turn begun in it), `revive_used` (GC-P6);
- `backlash` (GC-P7): `posture`, `turns_left` (of its 2), `running` (from the holder's next
  turn on), the disadvantage d6; while it runs the sheet carries it too (`backlash`), so a
  test outside the encounter applies its malus;
- `riposte` (GC-P2) / `counter_attack` (GC-P6): whom it may strike back at, before the turn
  changes (next-turn ends them unused), once;
- `provoked_by` (GC-P6): its provoker, binding in the turn of its next action
  (`provocation_pending` until that turn begins).
"""

from __future__ import annotations

from typing import Any

from app.kit.errors import Conflict
from app.rules.errors import RuleError
from app.rulesets.great_cosmos.rules.steps import GreatCosmosStep

START, END = "start_of_turn", "end_of_turn"
BACKLASH_TURNS = 2
_MALUS = {"malus_10": -10, "malus_20": -20}


# --- GC-P1: a posture changes before acting ----------------------------------------------------


def check_posture_change(*, on_turn: bool, acted: bool) -> None:
    """GC-P1 (Decision): in its own turn a combatant changes posture (a special one too) before it acts
    (a move before it is fine); once it has acted, not until its next turn: 409. Outside its turn only the
    GM acts for it (the GM's call, as for the other actions)."""
    if on_turn and acted:
        raise Conflict(
            "a posture changes before acting; this combatant has acted this turn: its next turn (GC-P1)",
            field="posture",
            extra={"rule": "GC-P1"},
            code="not_allowed_now",
        )


# --- GC-P7: a posture's length and its backlash --------------------------------------------------


def new_special(posture: str, round_: int) -> dict[str, Any]:
    """GC-P5/P6: a special posture entered in this turn (the entry turn is its first)."""
    return {"posture": posture, "since_round": round_, "turns": 1, "revive_used": False}


def posture_length(special: dict[str, Any], round_: int, *, on_turn: bool, acted: bool) -> int:
    """GC-P7 (Decision): a posture's length is the number of its holder's turns begun in it (the
    entry turn counts); a turn at whose start the holder leaves it before acting does not count."""
    turns = int(special.get("turns", round_ - int(special.get("since_round", round_)) + 1))
    begun_in_it = special.get("turn_round") == round_
    return turns - 1 if begun_in_it and on_turn and not acted else turns


def new_backlash(posture: str, die: int | None, disadvantage: str | None, *, at_once: bool) -> dict[str, Any]:
    """GC-P7 (Decision): the backlash's 2 turns are the holder's next two turns after the posture ends:
    it runs from its next turn (at once when the posture ended outside its turn)."""
    return {
        "posture": posture,
        "turns_left": BACKLASH_TURNS,
        "running": at_once,
        "disadvantage_die": die,
        "disadvantage": disadvantage,
    }


def sheet_backlash(backlash: dict[str, Any]) -> dict[str, Any]:
    """GC-P7: what the sheet carries while a backlash runs (every test applies its malus)."""
    return {"posture": backlash["posture"], "disadvantage_die": backlash.get("disadvantage_die")}


def backlash_malus(disadvantage: str | None) -> int:
    """GC-P7 (Decision): 4 and 5 are -10 and -20 on the target of every test during the backlash."""
    return _MALUS.get(disadvantage or "", 0)


def check_action_allowed(disadvantage: str | None) -> None:
    """GC-P7 (Decision): the disadvantage 6 cancels every action of the backlash's two turns (moves and
    posture changes stay allowed): 409."""
    if disadvantage == "action_cancelled":
        raise Conflict(
            "the Sépulcrale backlash's disadvantage 6 cancels every action of its two turns; moves stay "
            "allowed (GC-P7)",
            field="type",
            extra={"rule": "GC-P7"},
            code="cannot_act",
        )


# --- GC-P2 / GC-P6: striking back before the turn changes -----------------------------------------
# (`riposte`, `counter_attack` and `provoked_by` hold one combatant id each: the encounter's views hide
# a combatant the viewer may not see by these keys)

LAPSE_AT_TURN_CHANGE = ("riposte", "counter_attack")  # GC-P2, GC-P6 (Decisions): gone when the turn changes


def strike_back(counters: dict[str, Any], target: str) -> str | None:
    """The rule letting its holder attack `target` now (GC-P2 riposte, GC-P6 counter-attack), or None.
    Both are taken before the turn changes (next-turn ends them unused: `LAPSE_AT_TURN_CHANGE`), once."""
    for key, rule in (("riposte", "GC-P2"), ("counter_attack", "GC-P6")):
        if counters.get(key) == target:
            return rule
    return None


def use_strike_back(counters: dict[str, Any], rule: str) -> None:
    """The riposte or the counter-attack is spent (once)."""
    counters.pop("riposte" if rule == "GC-P2" else "counter_attack", None)


def lapse_at_turn_change(counters: dict[str, Any]) -> dict[str, Any] | None:
    """GC-P2/GC-P6: the counters once the turn changes (a riposte or counter-attack unused is gone), or
    None when nothing lapses."""
    if not any(k in counters for k in LAPSE_AT_TURN_CHANGE):
        return None
    return {k: v for k, v in counters.items() if k not in LAPSE_AT_TURN_CHANGE}


# --- GC-P6: provocation ---------------------------------------------------------------------------


def provoke(counters: dict[str, Any], by: str, *, before_its_action: bool) -> None:
    """GC-P6 (Decision, « lors de sa prochaine action »): a target the Sépulcrale damaged is bound in the
    turn of its next action: this one when it is its turn and it has not acted yet, else its next turn
    (`provocation_pending` until that turn begins)."""
    counters["provoked_by"] = by
    if before_its_action:
        counters.pop("provocation_pending", None)
    else:
        counters["provocation_pending"] = True


def provoker(counters: dict[str, Any]) -> str | None:
    """GC-P6: whom this combatant's attacks must aim at in this turn, if it is bound."""
    return None if counters.get("provocation_pending") else counters.get("provoked_by")


def _lapse(counters: dict[str, Any]) -> None:
    counters.pop("provoked_by", None)
    counters.pop("provocation_pending", None)


def check_provoked(counters: dict[str, Any], target: str, *, provoker_standing: bool) -> str | None:
    """GC-P6 (Decision): in the turn it binds, an attack (or a Final Skill aimed at an enemy) aims at the
    provoker (422); it lapses at once when the provoker is down or out of the fight. Returns the
    provoker when the action obeys it, None when unbound (the lapsed provocation removed)."""
    by = provoker(counters)
    if by is None:
        return None
    if not provoker_standing:
        _lapse(counters)
        return None
    if by != target:
        raise RuleError(
            "this combatant is provoked: its attacks this turn aim at its provoker (GC-P6)",
            field="target_id",
            extra={"rule": "GC-P6"},
            code="provoked",
        )
    return by


# --- a turn starts or ends ----------------------------------------------------------------------------


def turn_passes(
    counters: dict[str, Any], phase: str, round_: int
) -> tuple[dict[str, Any], dict[str, Any], list[GreatCosmosStep]] | None:
    """GC-P6/P7 at the start or the end of the holder's turn (a skipped turn passes too): at the start
    a special posture counts one more turn and a provocation begins to bind; at the end a binding
    provocation lapses, a backlash begins to run (the sheet carries it) or counts off one of its turns
    (its last: gone, from the sheet too). Returns (counters, sheet fields to write, steps), or None when
    nothing changes."""
    out = dict(counters)
    sheet: dict[str, Any] = {}
    steps: list[GreatCosmosStep] = []
    if phase == START:
        special = out.get("special")
        if isinstance(special, dict):
            out["special"] = {**special, "turns": int(special.get("turns", 1)) + 1, "turn_round": round_}
        if out.get("provocation_pending"):
            del out["provocation_pending"]
            steps.append(
                {
                    "rule": "GC-P6",
                    "key": "provoked_this_turn_s_attacks_aim_at_its_provoker",
                    "what": "provoked: this turn's attacks aim at its provoker",
                    "provoked_by": out.get("provoked_by"),
                }
            )
    else:
        if out.get("provoked_by") is not None and not out.get("provocation_pending"):
            _lapse(out)
            steps.append(
                {
                    "rule": "GC-P6",
                    "key": "provocation_lapses_its_turn_ended",
                    "what": "provocation lapses: its turn ended",
                }
            )
        backlash = out.get("backlash")
        if isinstance(backlash, dict) and "turns_left" in backlash:
            if not backlash.get("running"):
                out["backlash"] = {**backlash, "running": True}
                sheet["backlash"] = sheet_backlash(backlash)
                steps.append(
                    {
                        "rule": "GC-P7",
                        "key": "backlash_its_next_2_turns",
                        "what": "backlash: its next 2 turns",
                        "posture": backlash["posture"],
                    }
                )
            elif backlash["turns_left"] <= 1:
                del out["backlash"]
                sheet["backlash"] = None
                steps.append(
                    {"rule": "GC-P7", "key": "backlash_ends", "what": "backlash ends", "posture": backlash["posture"]}
                )
            else:
                out["backlash"] = {**backlash, "turns_left": backlash["turns_left"] - 1}
    if out == counters and not sheet:
        return None
    return out, sheet, steps
