"""Step keys for the fight steps logged before them

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 21:00:00.000000

Issue 27 item 2's tail: since every fight step carries `key` (a stable snake_case word a client
translates), steps logged before keys existed have none, and a client falls back to the server's
English `what`. This fills `key` in every stored fight step (the roll-log bodies of `kind:
"combat"`, which the encounter history reads, a heroism reroll's or a revert's steps too, and the
copies of those actions the players' `encounter.*` events carry, `event.player_data`) from its
`(rule, what)`, by the mapping the code declared when this migration was written (the call sites
tests/rulesets/test_step_keys.py reads), frozen here as data: 105 literal `(rule, what)` pairs
and 11 patterns of the texts the code formats (a condition's or a posture's name within), 100 kinds
of step (keys) in all. A step that already has a key keeps it; one whose `(rule, what)` is not in
the map (a text reworded since, a test ruleset's) keeps none, and a client still shows its `what`.
The key goes right after `rule`, the wire order. Rows are read and written in batches by `seq`.

Downgrade: nothing to undo. The code of revision 0013 already writes `key` in every step, so a
body with keys is a body of 0013; the keys filled here stay (removing them would lose those the
code wrote since).
"""

import re
from typing import Any, Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: Union[str, None] = "0013"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

BATCH = 500

# rule -> the step's literal `what` -> its key (frozen: the code's call sites as of this revision)
EXACT: dict[str, dict[str, str]] = {
    "AS-C1": {
        "attack test": "attack_test",
        "defense test": "defense_test",
        "unperceived attack: no defense": "unperceived_attack_no_defense",
    },
    "AS-C11": {
        "group of extras: one test": "group_of_extras_one_test",
        "one shared turn: the others' own turns of this round pass": (
            "one_shared_turn_the_others_own_turns_of_this_round_pass"
        ),
        "acted with others this round: no turn of its own left": "acted_with_others_this_round_no_turn_of_its_own_left",
    },
    "AS-C13": {"open perception test": "open_perception_test", "tie: 1d6 roll-off": "tie_1d6_roll_off"},
    "AS-C2": {"damage": "damage"},
    "AS-C3": {"protection": "protection", "vitality": "vitality"},
    "AS-C4": {
        "damage halved, rounded up": "damage_halved_rounded_up",
        "primes and penalties": "primes_and_penalties",
        "prudence / danger on this defense test": "prudence_danger_on_this_defense_test",
    },
    "AS-C5": {
        "dies at the end of the round": "dies_at_the_end_of_the_round",
        "mal en point": "mal_en_point",
        "wakes up": "wakes_up",
    },
    "AS-H1": {"heroism spent: a 4th die": "heroism_spent_a_4th_die"},
    "AS-H2": {
        "heroism spent: the action resolved again with new dice": (
            "heroism_spent_the_action_resolved_again_with_new_dice"
        )
    },
    "AS-T6": {
        "cooperating attack test": "cooperating_attack_test",
        "cooperation: the best result leads": "cooperation_the_best_result_leads",
        "one shared turn: the others' own turns of this round pass": (
            "one_shared_turn_the_others_own_turns_of_this_round_pass"
        ),
        "acted with others this round: no turn of its own left": "acted_with_others_this_round_no_turn_of_its_own_left",
    },
    "AS-T9": {"opposition": "opposition"},
    "GC-D1": {
        "placed (movement rules off: campaign option)": "placed_movement_rules_off_campaign_option",
        "move": "move",
    },
    "GC-D2": {"max move": "max_move"},
    "GC-D4": {"dash: agilite test": "dash_agilite_test"},
    "GC-O1": {
        "effective agilite": "effective_agilite",
        "turn order rules off (campaign option): the GM's order": "turn_order_rules_off_campaign_option_the_gm_s_order",
    },
    "GC-O2": {
        "no dodge nor parry against an attack from the same parallel slot": "no_defence_same_slot",
        "the target moved out of reach in this same slot: the attack fails": (
            "the_target_moved_out_of_reach_in_this_same_slot_the_attack_fails"
        ),
        "tie": "tie",
    },
    "GC-P1": {"offensive posture": "posture_taken"},
    "GC-P2": {"riposte": "riposte", "dodge": "dodge", "parry": "parry"},
    "GC-P3": {"attack test": "attack_test"},
    "GC-P4": {"damage": "damage"},
    "GC-P5": {
        "Final Skill": "final_skill",
        "Final Skill test (critical failures count as failures)": "final_skill_test_critical_failures_count_as_failures",
        "Illumination acts first": "illumination_acts_first",
        "advantage: an extra action each round while the posture lasts": (
            "advantage_an_extra_action_each_round_while_the_posture_lasts"
        ),
        "automatic defence (d10 <= 7)": "automatic_defence_d10_7",
    },
    "GC-P6": {
        "Apocalypse: Revive never fired: dies and comes back at 50% hp_max": (
            "apocalypse_revive_never_fired_dies_and_comes_back_at_50_hp_max"
        ),
        "Final Skill": "final_skill",
        "Revive: a fatal blow leaves 50% of hp_max instead (once)": "revive_a_fatal_blow_leaves_50_of_hp_max_instead_once",
        "counter-attack": "counter_attack",
        "counter-attack available": "counter_attack_available",
        "provocation lapses: its turn ended": "provocation_lapses_its_turn_ended",
        "provocation lapses: the provoker is down or out of the fight": (
            "provocation_lapses_the_provoker_is_down_or_out_of_the_fight"
        ),
        "provocation: its next offensive action aims at the Sépulcrale": (
            "provocation_its_next_offensive_action_aims_at_the_sepulcrale"
        ),
        "provoked: attacks its provoker": "provoked_attacks_its_provoker",
        "provoked: this turn's attacks aim at its provoker": "provoked_this_turn_s_attacks_aim_at_its_provoker",
    },
    "GC-P7": {
        "Illumination backlash: cannot act": "illumination_backlash_cannot_act",
        "Sépulcrale backlash: acts last": "sepulcrale_backlash_acts_last",
        "backlash ends": "backlash_ends",
        "backlash: its next 2 turns": "backlash_its_next_2_turns",
        "the fight ends: no backlash after it": "the_fight_ends_no_backlash_after_it",
    },
    "GM": {"heal": "heal", "damage": "damage"},
    "RB-C2": {"tie: d100 rerolls, lowest first": "tie_d100_rerolls_lowest_first"},
    "RB-C4": {"dodge: confrontation": "dodge_confrontation"},
    "RB-F1": {"hp": "damage", "pe": "damage"},  # a pool's name: the GM's damage on it
    "RB-F2": {"attack test": "attack_test", "damage": "damage", "the attack misses": "the_attack_misses"},
    "RB-F3": {
        "absorb: armour": "absorb_armour",
        "critical dodge: a free attack": "critical_dodge_a_free_attack",
        "critical failure of the dodge: damage doubled": "critical_failure_of_the_dodge_damage_doubled",
        "dodge test": "dodge_test",
        "free attack": "free_attack",
    },
    "RB-F4": {
        "HAB test": "hab_test",
        "critical failure: acts only from round 2": "critical_failure_acts_only_from_round_2",
        "critical success: an extra action before round 1": "critical_success_an_extra_action_before_round_1",
        "does not act this round": "does_not_act_this_round",
    },
    "WA-C1": {"attack test": "attack_test", "damage": "damage"},
    "WA-C2": {
        "damage": "damage",
        "critical success: damage dice rolled twice": "critical_success",
        "critical success below the defense: normal damage": "critical_success",
    },
    "WA-C3": {"critical failure: a miss": "critical_failure_a_miss"},
    "WA-C4": {
        "initiative = 10 + DEX": "initiative_10_dex",
        "tie: d20 roll-off, highest first": "tie_d20_roll_off_highest_first",
    },
    "WA-C5": {"above 0 HP: no longer down": "above_0_hp_no_longer_down", "down: 0 HP": "down_0_hp", "hp": "hp"},
    "WA-T5": {"pending modifier consumed": "pending_modifier_consumed"},
    "conditions": {
        "condition added": "condition_added",
        "condition ends": "condition_ends",
        "condition removed": "condition_removed",
        "condition ticks": "condition_ticks",
    },
    "reveal_on_turn": {"revealed on its first turn": "revealed_on_its_first_turn"},
    "revert": {
        "character deleted since: not restored": "character_deleted_since_not_restored",
        "combatant removed since: not restored": "combatant_removed_since_not_restored",
    },
    "turn": {
        "back in the fight": "back_in_the_fight",
        "does not act this round": "does_not_act_this_round",
        "down": "down",
        "down: skipped": "down_skipped",
        "joins the fight": "joins_the_fight",
        "new round": "new_round",
        "nobody can act": "nobody_can_act",
        "turn ends": "turn_ends",
        "turn starts": "turn_starts",
    },
}

# the texts the code formats: (the rules it writes them under, the text's pattern, the key)
PATTERNS: list[tuple[tuple[str, ...], str, str]] = [
    (("AS-C1",), r".+: it does not perceive", "it_does_not_perceive"),
    (("AS-C5",), r".+: counted in the fight", "condition_counted_in_the_fight"),
    (("AS-C5", "AS-C6"), r"no longer .+", "condition_no_longer"),
    (("AS-C5",), r".+: a round less", "condition_a_round_less"),
    (("GC-O3",), r"extra action \d+", "extra_action"),
    (("GC-P5", "GC-P6"), r"enters .+", "enters_special_posture"),
    (("GC-P7",), r"leaves .+", "leaves_special_posture"),
    (("GC-P2",), r".+ posture", "posture_taken"),
    (("GC-P1", "GC-P6", "GC-P7"), r"no dodge nor parry in .+", "no_defence_in_posture"),
    (("GC-P5",), r"an (unparryable|undodgeable) attack: no (parry|dodge)", "no_defence_against_this_attack"),
    (("GC-P6",), r"the fight ends: leaves .+", "the_fight_ends_leaves_posture"),
]
_PATTERNS = [(set(rules), re.compile(pattern), key) for rules, pattern, key in PATTERNS]


def key_of(rule: Any, what: Any) -> str | None:
    """The key of a step's `(rule, what)`, or None: not one the code wrote as of this revision."""
    if not isinstance(rule, str) or not isinstance(what, str):
        return None
    found = EXACT.get(rule, {}).get(what)
    if found is not None:
        return found
    return next((key for rules, pattern, key in _PATTERNS if rule in rules and pattern.fullmatch(what)), None)


def keyed(step: dict[str, Any]) -> dict[str, Any] | None:
    """The step with its key right after its rule; None: left as it is (keyed already, or unknown)."""
    if "key" in step or "rule" not in step or "what" not in step:
        return None
    key = key_of(step["rule"], step["what"])
    if key is None:
        return None
    out: dict[str, Any] = {}
    for name, value in step.items():
        out[name] = value
        if name == "rule":
            out["key"] = key
    return out


def filled(node: Any) -> tuple[Any, bool]:
    """`node` with a key in every step of every `steps` list within it (a reroll's or a revert's
    nested bodies too); whether anything changed."""
    changed = False
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for name, value in node.items():
            if name == "steps" and isinstance(value, list):
                steps = []
                for step in value:
                    new = keyed(step) if isinstance(step, dict) else None
                    if new is not None:
                        changed = True
                    inner, more = filled(new if new is not None else step)
                    changed = changed or more
                    steps.append(inner)
                out[name] = steps
            else:
                out[name], more = filled(value)
                changed = changed or more
        return out, changed
    if isinstance(node, list):
        items = []
        for value in node:
            inner, more = filled(value)
            changed = changed or more
            items.append(inner)
        return items, changed
    return node, False


_log = sa.table(
    "roll_log",
    sa.column("seq", sa.BigInteger()),
    sa.column("kind", sa.String()),
    sa.column("body", sa.JSON()),
)


_event = sa.table(
    "event",
    sa.column("seq", sa.BigInteger()),
    sa.column("type", sa.String()),
    sa.column("player_data", sa.JSON()),
)


def _fill(conn, table: sa.TableClause, column: str, where: sa.ColumnElement[bool]) -> None:
    """Every row of `table` matching `where`, its JSON `column` given its steps' keys, in batches by seq."""
    value = table.c[column]
    last = -1
    while True:
        rows = conn.execute(
            sa.select(table.c.seq, value).where(where, table.c.seq > last).order_by(table.c.seq).limit(BATCH)
        ).all()
        if not rows:
            return
        for seq, data in rows:
            new, changed = filled(data)
            if changed:
                conn.execute(sa.update(table).where(table.c.seq == seq).values({column: new}))
        last = rows[-1][0]


def upgrade() -> None:
    conn = op.get_bind()
    _fill(conn, _log, "body", _log.c.kind == "combat")
    # the copies of an action the players' events carry (the GM's refers to the log's): the same steps
    _fill(conn, _event, "player_data", _event.c.type.like("encounter.%") & _event.c.player_data.is_not(None))


def downgrade() -> None:
    """Nothing: keys are what revision 0013's code writes itself (see the docstring)."""
